"""The predict stage: run HPL's own code under SMPI with kernels replaced by time models.

`predict` runs one configuration per simulation (so a configuration's result never
depends on which others were asked for), in a fresh directory holding the platform XML,
the hostfile, HPL.dat and the model table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from hplsim import __version__
from hplsim.clitypes import RANKS_PER_HOST, SEED, TIMEOUT
from hplsim.emulate.memory import check_mapping_budget, folding_config
from hplsim.emulate.progress import Listener, PanelBar, ProgressPipe
from hplsim.emulate.preloads import simulation_preloads
from hplsim.emulate.smpirun import run_smpirun
from hplsim.emulate.trace import TraceRequest, trace_env, write_run_trace
from hplsim.errors import HplsimError, Interrupted, warn, with_warnings
from hplsim.hpl.build import EMULATED, EMULATED_TIMING, hpl_binary
from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import read_hpl_dat, write_hpl_dat
from hplsim.hpl.output import expect_phases, format_phases, text_table
from hplsim.hpl.options import HPL_OPTION_KEYS, hpl_options, params_from_options
from hplsim.models.modelfile import ModelFile, load_model, write_runtime_table
from hplsim.models.population import draw_cluster, with_variability
from hplsim.outputs import check_dir, check_file, write_json
from hplsim.platform.spec import Platform, load_platform
from hplsim.presets import DEFAULT, PRESETS, get_preset
from hplsim.processes import run_dir
from hplsim.models.intervals import Interval, interval, kernel_shares, model_rsd

DEFAULT_TIMEOUT_S = 24 * 3600.0


@dataclass(frozen=True)
class ModelSource:
    """A loaded model file and what identifies it in results."""

    model: ModelFile
    label: str
    digest: str

    @classmethod
    def from_path(cls, path: Path, label: str | None = None) -> "ModelSource":
        from hplsim.formats import parse_yaml
        from hplsim.models.modelfile import model_from_dict

        # One read for the model and its digest: a file rewritten between two reads (during
        # a sweep) would have its runs keyed by content they did not use.
        path = Path(path)
        try:
            data = path.read_bytes()
            text = data.decode()
        except (OSError, UnicodeDecodeError):
            model = load_model(path)  # says what is wrong with the file (or it is back: read it)
            return cls(model, label or str(path), hashlib.sha256(path.read_bytes()).hexdigest())
        model = model_from_dict(parse_yaml(text.replace("\r\n", "\n"), f"model file {path}", "YAML/JSON"), str(path))
        return cls(model, label or str(path), hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Prediction:
    config: HplConfig
    seed: int
    gflops: float
    time_s: float
    sim_wall_s: float
    sim_memory_bytes: int
    platform: str
    platform_digest: str
    model: str
    model_digest: str
    breakdown: dict | None = None
    sampled: dict | None = None  # a population model's draw: {"population": …, "sampled_hosts": […]}
    # What the folding costs the kernel, outside PSS (docs/predict.md, Memory).
    sim_mappings: int = 0
    sim_page_table_bytes: int = 0
    #: relative sd of HPL's time from the model's declared uncertainty (models/intervals.py)
    model_rsd: float = 0.0
    #: how the pivot search's exchanges ran, and under `checked` how far the model landed
    exchanges: dict | None = None
    #: with `phases=True`: HPL's own per-phase times (hpl/output.py, PHASES), seconds
    phases: dict | None = None

    def to_dict(self) -> dict:
        extra = {"breakdown": self.breakdown} if self.breakdown is not None else {}
        if self.phases is not None:
            extra["phases"] = self.phases
        extra.update(self.sampled or {})
        return {
            **self.config.as_dict(),
            "label": self.config.label(),
            "seed": self.seed,
            "gflops": self.gflops,
            "time_s": self.time_s,
            "sim_wall_s": self.sim_wall_s,
            "sim_memory_bytes": self.sim_memory_bytes,
            "sim_mappings": self.sim_mappings,
            "sim_page_table_bytes": self.sim_page_table_bytes,
            "platform": self.platform,
            "platform_digest": self.platform_digest,
            "model": self.model,
            "model_digest": self.model_digest,
            "hplsim_version": __version__,
            **interval([self.gflops], self.model_rsd).to_dict(),
            **({"exchanges": self.exchanges} if self.exchanges is not None else {}),
            **extra,
        }


def check_inputs(config: HplConfig, platform: Platform, model: ModelFile) -> list[str]:
    """Refuse what cannot run, before anything runs. Returns the hosts of the used slots."""
    if config.ranks > len(platform.slots):
        raise HplsimError(
            f"P x Q = {config.p} x {config.q} = {config.ranks} ranks, but the platform "
            f"{platform.label or ''} has only {len(platform.slots)} rank slots"
        )
    used = platform.slots[: config.ranks]
    model.check_hosts(used)
    check_kernels(model, used)
    return used


#: Take the runtime's per-kernel report on every run (written at the end, it changes
#: nothing in the run), to say which modelled kernels cost nothing.
KERNEL_REPORT = True

#: Kernels without which a prediction means nothing (dgemm: most of HPL's time), and those
#: whose absence is worth a warning (dtrsm: the next largest share). The small kernels the
#: published models leave out (dger, some row swaps) cost 0 s without a word.
REQUIRED_KERNELS = ("dgemm",)
MAJOR_KERNELS = ("dtrsm",)


def check_kernels(model: ModelFile, hosts: list[str]) -> None:
    """Refuse a model that gives a used host no dgemm law (every call would cost 0 s: a
    figure many times too high), and warn about a missing dtrsm."""
    missing: dict[str, list[str]] = {}
    for host in dict.fromkeys(hosts):
        for cpu in range(model.cpus_of(host)):
            kernels = model.resolve(host, cpu)
            for k in (*REQUIRED_KERNELS, *MAJOR_KERNELS):
                if k not in kernels:
                    missing.setdefault(k, []).append(host if model.cpus_of(host) == 1 else f"{host} CPU {cpu}")
    for k in REQUIRED_KERNELS:
        if k in missing:
            where = ", ".join(dict.fromkeys(missing[k][:3])) + (" …" if len(missing[k]) > 3 else "")
            raise HplsimError(f"the model has no {k} law for {where}: every {k} call would cost 0 s and the "
                              f"prediction would be meaningless (most of HPL's time is {k})")
    for k in MAJOR_KERNELS:
        if k in missing:
            warn(f"the model has no {k} law (for {len(set(missing[k]))} of the hosts used): every {k} call costs 0 s, "
                 "so the prediction is optimistic")


#: calls below which "every call cost 0 s" may be the noise: a draw of the Dahu model's
#: daxpy (mean 0.67 us, half-normal noise of sd 0.93 us) is negative, hence clamped to 0, 28 %
#: of the time, and a run that calls it once or twice (N = 1,024 on 1x1,024) warned that
#: the built-in law was negative; eight negative draws in a row: 4e-5
MIN_CALLS_ZERO_COST = 8


def zero_cost_kernels(split: dict, model: ModelFile, hosts: list[str]) -> list[str]:
    """Kernels the model has a law for whose every call, of at least MIN_CALLS_ZERO_COST,
    cost 0 s in the run: their law is <= 0 at the sizes HPL called them with (negative
    durations are clamped to 0)."""
    modelled = {k for h in dict.fromkeys(hosts) for c in range(model.cpus_of(h)) for k in model.resolve(h, c)}
    return [name for name, k in split["kernels"].items()
            if k["calls"] >= MIN_CALLS_ZERO_COST and k["seconds"] == 0 and name in modelled]


def host_mismatch_warning(platform: Platform, model: ModelFile) -> str | None:
    """A model with per-host entries none of which is a platform host is most likely a
    naming mismatch (e.g. ``dahu-0`` vs ``dahu-0.grid5000.fr``): every rank would silently
    use the default entry. Say so."""
    if model.hosts and not set(model.hosts) & set(platform.hosts):
        return (f"none of the model's {len(model.hosts)} hosts (e.g. {next(iter(model.hosts))}) is a host of "
                f"the platform (e.g. {platform.hosts[0]}): every rank uses the model's default entry")
    return None


def _parse_result(stdout: str, config: HplConfig) -> tuple[float, float]:
    for line in stdout.splitlines():
        if line.startswith("HPLSIM_RESULT "):
            _, label, n, nb, p, q, time_s, gflops = line.split()
            if (int(n), int(nb), int(p), int(q)) != (config.n, config.nb, config.p, config.q):
                raise HplsimError(f"simulation reported another configuration than asked: {line}")
            return float(time_s), float(gflops)
    raise HplsimError("simulation finished without a result line (see HPL's output with --keep DIR)")


#: how the pivot search's exchange within a process column runs (docs/predict.md, "Modelled
#: exchanges"): modelled (the default: the column's candidates meet in shared memory and
#: each rank pays what HPL's messages would have cost it alone on the network), messages
#: (HPL's own messages, the reference), checked (messages, and each exchange compared
#: with what the model gives for the same entries)
EXCHANGES = ("modelled", "messages", "checked")


def _exchanges(report: str, mode: str) -> dict:
    """The ranks' HPLSIM_EXCHANGES lines: the pivot searches' exchanges per rank (max),
    and under `checked` the model's largest and mean distance from the messages' times."""
    count = checked = differ = sends = replayed = 0
    dt_sum, dt_max = 0.0, 0.0
    for line in report.splitlines():
        fields = line.split()
        if not fields or fields[0] != "HPLSIM_EXCHANGES":
            continue
        count = max(count, int(fields[3]))
        extra = dict(f.split(":", 1) for f in fields[4:])
        sends += int(extra.pop("sends", 0))
        replayed += int(extra.pop("replayed_sends", 0))
        if extra:
            checked += int(extra["checked"])
            differ += int(extra["winners_differ"])
            dt_sum += float(extra["dt_sum"])
            dt_max = max(dt_max, float(extra["dt_abs_max"]))
    doc: dict = {"mode": mode, "pivot_exchanges_per_rank": count, "simulated_messages": sends,
                 "modelled_messages": replayed}
    if mode == "checked":
        doc.update(checked=checked, winners_differ=differ, model_minus_messages_mean_s=dt_sum / checked if checked else 0.0,
                   model_minus_messages_abs_max_s=dt_max)
    return doc


def _breakdown(report: str, hpl_time: float) -> dict:
    """Per rank: modelled compute time, and the rest of HPL's time (MPI: transfers and
    waiting); per kernel: calls and seconds summed over ranks."""
    compute, kernels = [], {}
    # HPL's probes, the failed ones, busy-waits turned into receives, and failed probes
    # answered from the message counts without SimGrid (csrc/kernel-models/mailbox.c)
    probes = dict.fromkeys(("real", "failed", "busy_waits_hinted", "answered_from_counts"), 0)
    for line in report.splitlines():
        fields = line.split()
        if fields and fields[0] == "HPLSIM_PROBES":
            for key, value in zip(probes, fields[2:]):
                probes[key] += int(value)
            continue
        if not fields or fields[0] != "HPLSIM_KERNEL_TIME":
            continue
        compute.append(float(fields[2]))
        for item in fields[3:]:
            name, calls, seconds = item.rsplit(":", 2)
            k = kernels.setdefault(name, {"calls": 0, "seconds": 0.0})
            k["calls"] += int(calls)
            k["seconds"] += float(seconds)
    if not compute:
        raise HplsimError("the simulation wrote no kernel report")
    compute.sort()

    def stats(values: list[float]) -> dict:
        return {"min": values[0], "median": values[len(values) // 2], "max": values[-1]}

    return {
        "ranks": len(compute),
        "compute_s": stats(compute),
        "mpi_s": stats(sorted(hpl_time - c for c in compute)),
        "kernels": dict(sorted(kernels.items(), key=lambda kv: -kv[1]["seconds"])),
        "probes": probes,
    }


def predict(
    config: HplConfig,
    platform: Platform,
    model: ModelSource,
    seed: int = 0,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    keep_dir: Path | None = None,
    breakdown: bool = False,
    trace: TraceRequest | None = None,
    progress: Listener | None = None,
    exchanges: str = "modelled",
    phases: bool = False,
) -> Prediction:
    """HPL's performance for `config` on `platform` with the kernel models of `model`:
    one simulation, its noise drawn from `seed` (same inputs and seed, same bits).

    `progress`, if given, is called from a reader thread with (first column of the
    panel HPL sets up, simulated time) as the simulation goes (emulate/progress.py).

    `phases`: run HPL built with its own per-phase timers (``HPL_DETAILED_TIMING``) and
    report them as a real HPL built so prints them (docs/predict.md, HPL's phase times).

    >>> from hplsim.hpl.config import HplConfig
    >>> from hplsim.platform.spec import spec_from_dict
    >>> from hplsim.presets import DEFAULT
    >>> platform = spec_from_dict({"nodes": 4, "cores_per_node": 1,
    ...                            "network": {"bandwidth": "12.5GBps", "latency": "1us"}}).platform()
    >>> dahu = ModelSource.from_path(DEFAULT.model, "builtin:dahu")
    >>> config = HplConfig(n=2000, nb=64, p=2, q=2)
    >>> a = predict(config, platform, dahu, seed=1)
    >>> b = predict(config, platform, dahu, seed=1)
    >>> a.gflops > 0, a.gflops == b.gflops, a.time_s == b.time_s
    (True, True, True)
    """
    if exchanges not in EXCHANGES:
        raise HplsimError(f"exchanges {exchanges!r}: expected one of {', '.join(EXCHANGES)}")
    used = check_inputs(config, platform, model.model)
    folding = folding_config()
    check_mapping_budget(config, folding)
    binary = hpl_binary(EMULATED_TIMING if phases else EMULATED)
    # HPL's timers read MPI_Wtime at every phase boundary (each pivot column's exchange
    # among them), and a platform may charge each read (smpi/wtime, Dahu's 5.1 us): free
    # here, or the timers would add their own cost to the phases they time.
    timer_cfg = {"smpi/wtime": "0"} if phases else {}
    with run_dir("run") as tmp:
        work = check_dir(Path(keep_dir).resolve(), "the run folder (--keep)") if keep_dir else tmp
        (work / "platform.xml").write_text(platform.xml)
        (work / "hostfile").write_text("\n".join(used) + "\n")
        drawn = draw_cluster(model.model, used, seed)
        write_runtime_table(drawn.model, used, work / "model.table")
        # A negative threshold: HPL skips its residual check (the emulation computes nothing).
        write_hpl_dat(HplParams.from_config(config, threshold=-1.0), work / "HPL.dat")
        report = work / "kernels.txt"
        report.unlink(missing_ok=True)
        args = ["model.table", str(seed)] + ([report.name] if breakdown or KERNEL_REPORT else [])
        trace_cfg, trace_vars = trace_env(trace, work) if trace else ({}, {})
        with ProgressPipe(progress) if progress else contextlib.nullcontext() as pipe:
            out = run_smpirun(
                binary, args, work, work / "platform.xml", work / "hostfile",
                config.ranks, {**folding, **platform.config, **trace_cfg, **timer_cfg}, timeout,
                preloads=simulation_preloads(binary),
                # SMPI copies the program once per rank into TMPDIR (dlopen privatization) and
                # leaves a partial copy behind when the disk fills: into the run's own folder
                env={"TMPDIR": str(tmp),
                     "HPLSIM_IPROBE_REPORTS": platform.iprobe_reports, "HPLSIM_HOSTFILE": str(work / "hostfile"),
                     "HPLSIM_EXCHANGES": exchanges, **trace_vars, **(pipe.env if pipe else {})},
                pass_fds=(pipe.fd,) if pipe else (),
            )
        if keep_dir:
            (work / "stdout.txt").write_text(out.stdout)
            (work / "stderr.txt").write_text(out.stderr)
        time_s, gflops = _parse_result(out.stdout, config)
        phase_times = expect_phases(out.stdout) if phases else None
        report_text = report.read_text() if report.exists() else ""
        split = _breakdown(report_text, time_s) if breakdown or KERNEL_REPORT else None
        free = zero_cost_kernels(split, drawn.model, used) if split else []
        if "dgemm" in free:
            raise HplsimError("every dgemm call's modelled duration is <= 0 s (clamped to 0): the model's dgemm law "
                              "is negative at the sizes HPL uses; check its coefficients")
        if free:
            warn(f"{', '.join(free)}: every call cost 0 s, the model's law being <= 0 at the sizes HPL used "
                 "(negative durations are clamped to 0): check its coefficients")
        if time_s > IMPLAUSIBLE_TIME_S:
            warn(f"{config.label()} N={config.n}: predicted time {time_s:.4g} s is beyond any real HPL run: "
                 "check the model's coefficients")
        pred = Prediction(
            config, seed, gflops, time_s, out.wall_s, out.peak_pss_bytes,
            platform.label, platform.digest(), model.label, model.digest, split if breakdown else None,
            _sampled(model.model, drawn), out.peak_maps, out.peak_page_table_bytes,
            model_rsd(model.model, kernel_shares(split, time_s)) if split else model_rsd(model.model),
            _exchanges(report_text, exchanges), phase_times,
        )
        if trace:
            write_run_trace(trace, work, pred.to_dict())
    return pred


def _sampled(model: ModelFile, drawn) -> dict | None:
    """What a population model drew for this run (the run's seed decides it)."""
    if not model.population:
        return None
    return {
        "population": {k: {"spatial_variability": p.spatial_scale, "temporal_variability": p.temporal_scale,
                           "run_effect_log": drawn.runs.get(k, {})} for k, p in model.population.items()},
        "sampled_hosts": drawn.hosts,
    }


# ------------------------------------------------------------------------------- CLI


#: a predicted time above this (a year) is a wrong model, not a run
IMPLAUSIBLE_TIME_S = 3.2e7
EXAMPLE = dict(n=20000, p=8, q=8)  # the built-in example's size (see README)
_params_from_options = params_from_options  # kept for callers of the old private name


_TABLE = [("T/V", "<10"), ("N", ">9"), ("NB", ">6"), ("P", ">5"), ("Q", ">5"), ("Time (s)", ">14"),
          ("Gflops", ">14.6g"), ("sim wall (s)", ">14.2f"), ("sim mem (MB)", ">14.1f")]


def _format_table(preds: list[Prediction]) -> str:
    return text_table(_TABLE, [[p.config.label(), p.config.n, p.config.nb, p.config.p, p.config.q,
                                _seconds(p.time_s), p.gflops, p.sim_wall_s, p.sim_memory_bytes / 1e6]
                               for p in preds])


def _seconds(t: float) -> str:
    return f"{t:.4f}" if t < 1e6 else f"{t:.4g}"


def _format_breakdown(p: Prediction) -> str:
    b = p.breakdown
    c, m = b["compute_s"], b["mpi_s"]
    lines = [
        f"{p.config.label()} N={p.config.n}: time split over {b['ranks']} ranks (HPL time {p.time_s:.4g} s)",
        f"  compute (modelled kernels): min {c['min']:.4g}  median {c['median']:.4g}  max {c['max']:.4g} s",
        f"  MPI (transfers + waiting):  min {m['min']:.4g}  median {m['median']:.4g}  max {m['max']:.4g} s",
        "  kernels, summed over ranks:",
    ]
    total = sum(k["seconds"] for k in b["kernels"].values()) or 1.0
    for name, k in b["kernels"].items():
        lines.append(f"    {name:<15}{k['calls']:>12} calls {k['seconds']:>12.4g} s {100 * k['seconds'] / total:>6.1f} %")
    pr = b["probes"]
    lines.append(f"  panel probes: {pr['real']} ({pr['failed']} failed, {pr['answered_from_counts']} of them answered "
                 f"from the message counts); busy-waits turned into receives: {pr['busy_waits_hinted']}")
    return "\n".join(lines)


@click.command("predict")
@hpl_options
@click.option("--platform", "platform_path", type=click.Path(path_type=Path),
              help="Platform: YAML spec or SimGrid XML (default: the built-in Dahu platform).")
@click.option("--fat-tree-as-star", is_flag=True,
              help="Run a fat-tree platform spec as a star of its hosts whose routes keep the fat-tree's "
                   "latencies: several times faster to simulate, without the switch links' contention "
                   "(docs/predict.md, Fat-trees as stars).")
@click.option("--ranks-per-host", type=RANKS_PER_HOST, help="Rank slots per host of an XML platform (default: its cores).")
@click.option("--model", "model_path", type=click.Path(path_type=Path),
              help="Model file (default: the built-in Dahu models).")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), help="A built-in platform + model + HPL parameters.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of every random draw (noise, pivots).")
@click.option("--timeout", type=TIMEOUT, default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Kill a simulation running longer than this (seconds).")
@click.option("--replicates", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Simulate each configuration this many times (seeds SEED, SEED+1, ...): Gflops is their mean "
                   "and the 90 % interval includes their spread (docs/tune.md).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per configuration.")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Also write the JSON results to this file.")
@click.option("--keep", type=click.Path(path_type=Path), help="Keep the run directory (inputs, HPL output) here.")
@click.option("--spatial-variability", type=float,
              help="With a population model: scale the spread between nodes (0 = every node the mean node, "
                   "1 = as fitted, 2 = twice as uneven).")
@click.option("--temporal-variability", type=float,
              help="With a population model: scale the run-to-run (day-to-day) spread, same scale.")
@click.option("--breakdown", is_flag=True,
              help="Also report each rank's time split (modelled compute vs MPI) and the time per kernel.")
@click.option("--phases", is_flag=True,
              help="Also report HPL's own per-phase times (panel factorization, pivot exchanges, update, row "
                   "swaps, solve) as a real HPL built with -DHPL_DETAILED_TIMING prints them "
                   "(docs/predict.md, HPL's phase times).")
@click.option("--trace", "trace_dir", type=click.Path(path_type=Path),
              help="Record every rank's kernels, MPI calls and waits into this directory (docs/formats/trace.md).")
@click.option("--trace-panels", type=click.IntRange(min=1),
              help="With --trace: record only HPL's first K panels (cheap at any rank count).")
@click.option("--trace-paje", is_flag=True, help="With --trace: also write SMPI's own Paje trace (ViTE) there.")
@click.option("--exchanges", type=click.Choice(EXCHANGES), default="modelled", show_default=True,
              help="The pivot search's exchange within a process column: 'modelled' (candidates meet in "
                   "shared memory, each rank pays what HPL's messages cost it on the platform's network "
                   "laws; fast), 'messages' (HPL's own messages, simulated one by one: the reference), "
                   "'checked' (messages, each exchange also compared with the model; the JSON's "
                   "`exchanges` says how far it landed). docs/predict.md, Modelled exchanges.")
def predict_command(**opts) -> None:
    """Predict HPL's Gflops on a simulated platform by emulating HPL under SimGrid/SMPI.

    With no option at all, runs the built-in example: HPL on 64 ranks (2 Dahu nodes),
    N=20,000, with the published Dahu models.
    """
    example = all(opts[k] is None for k in (*HPL_OPTION_KEYS, "preset", "platform_path", "model_path"))
    preset = get_preset(opts["preset"]) if opts["preset"] else None

    if example:
        click.echo(f"hplsim: no parameters given: running the built-in example "
                   f"(Dahu platform and models, N={EXAMPLE['n']}, P x Q = {EXAMPLE['p']} x {EXAMPLE['q']})",
                   err=True)
        config = DEFAULT.config(EXAMPLE["n"])
        params = HplParams.from_config(HplConfig(**{**config.as_dict(), "p": EXAMPLE["p"], "q": EXAMPLE["q"]}))
    else:
        base = read_hpl_dat(opts["hpl_dat"]) if opts["hpl_dat"] else None
        if base is None and preset is not None:
            if opts["n"] is None:
                raise HplsimError(f"--preset {preset.name} needs the problem size -N")
            base = HplParams.from_config(preset.config(opts["n"][0])).replace(ns=opts["n"])
        params = params_from_options(base, opts)

    source = preset or DEFAULT
    if preset is not None and preset.machine_state:
        # two presets describe one cluster in two states: say which one answers
        click.echo(f"hplsim: preset {preset.name}: {preset.machine_state}", err=True)
    platform = (load_platform(opts["platform_path"], opts["ranks_per_host"], opts["fat_tree_as_star"])
                if opts["platform_path"] else source.load_platform(opts["ranks_per_host"], opts["fat_tree_as_star"]))
    model = (ModelSource.from_path(opts["model_path"]) if opts["model_path"]
             else ModelSource.from_path(source.model, f"builtin:{source.name}"))
    if opts["spatial_variability"] is not None or opts["temporal_variability"] is not None:
        model = dataclasses.replace(model, model=with_variability(model.model, opts["spatial_variability"],
                                                                  opts["temporal_variability"]))
    configs = params.configs()
    if opts["output"]:
        check_file(opts["output"], "the results (-o)")
    if opts["keep"]:
        check_dir(opts["keep"], "the run folders (--keep)")
    for c in configs:  # refuse impossible combinations before the first simulation
        check_inputs(c, platform, model.model)
    warning = host_mismatch_warning(platform, model.model)
    if warning:
        warn(warning)
    from hplsim.hpl import cost

    wall = sum(cost.estimate_s(c) for c in configs) * opts["replicates"]
    if wall > cost.WORTH_SAYING_S:  # before an hour-long simulation starts without a word
        memory = max(cost.estimate_memory_bytes(c) for c in configs)
        click.echo(f"hplsim: estimated simulation cost: about {cost.duration_text(wall)} and "
                   f"{cost.memory_text(memory)} (docs/predict.md, Cost of a simulation)", err=True)

    trace = TraceRequest.from_options(opts["trace_dir"], opts["trace_panels"], opts["trace_paje"], len(configs))
    show_progress = not opts["as_json"] and sys.stderr.isatty()
    # Each configuration is its own simulation: one that fails does not take the others'
    # results with it. What finished is printed and stored, then the failures are an error.
    preds: list[list[Prediction]] = []  # per configuration, one per replicate
    failed: list[str] = []
    replicates = opts["replicates"]
    if opts["seed"] + replicates - 1 >= 2**64:
        raise HplsimError(f"--seed {opts['seed']} with --replicates {replicates}: the seeds would pass 2**64-1")
    try:
        for i, config in enumerate(configs):
            keep = (opts["keep"] / f"{i:03d}-{config.label()}-{config.n}") if opts["keep"] else None
            desc = f"{config.label()} N={config.n}" + (f" ({i + 1}/{len(configs)})" if len(configs) > 1 else "") + ": "
            try:
                runs: list[Prediction] = []
                for r in range(replicates):
                    where = keep / f"seed-{opts['seed'] + r}" if keep and replicates > 1 else keep
                    with PanelBar(config.n, config.nb, desc, leave=False, disable=not show_progress) as bar:
                        runs.append(predict(config, platform, model, opts["seed"] + r, opts["timeout"], where,
                                            opts["breakdown"], trace if r == 0 else None,
                                            progress=bar if show_progress else None,
                                            exchanges=opts["exchanges"], phases=opts["phases"]))
                        bar.finish()
                preds.append(runs)
            except HplsimError as exc:
                if len(configs) == 1:
                    raise
                failed.append(f"{config.label()} N={config.n} NB={config.nb} {config.p}x{config.q}: {exc}")
                click.echo(f"hplsim: configuration {i + 1}/{len(configs)} failed: {failed[-1]}", err=True)
    except (KeyboardInterrupt, Interrupted):
        _emit(preds, platform, model, opts)  # what finished before the interruption is kept
        raise
    _emit(preds, platform, model, opts)
    if failed:
        raise HplsimError(f"{len(failed)} of {len(configs)} configurations failed "
                          f"({len(preds)} printed{' and stored' if opts['output'] else ''}); first: {failed[0]}")


def _summary(runs: list[Prediction]) -> tuple[dict, Interval]:
    """One configuration's JSON object: the first seed's run, and with replicates, the mean
    over seeds as `gflops` / `time_s` and every seed's figures; the 90 % interval."""
    doc = runs[0].to_dict()
    iv = interval([p.gflops for p in runs], max(p.model_rsd for p in runs))
    if len(runs) > 1:
        doc.update(gflops=iv.central, time_s=sum(p.time_s for p in runs) / len(runs),
                   seeds=[p.seed for p in runs], gflops_runs=[p.gflops for p in runs],
                   time_s_runs=[p.time_s for p in runs])
    doc.update(iv.to_dict())
    return doc, iv


def _emit(preds: list[list[Prediction]], platform: Platform, model: ModelSource, opts: dict) -> None:
    if not preds:
        return
    summaries = [_summary(runs) for runs in preds]
    doc = [d for d, _ in summaries]
    if opts["as_json"]:
        json.dump(with_warnings(doc), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        click.echo(_format_table([runs[0] for runs in preds] if opts["replicates"] == 1 else
                                 [dataclasses.replace(runs[0], gflops=d["gflops"], time_s=d["time_s"])
                                  for runs, (d, _) in zip(preds, summaries)]))
        seeds = (f"seeds: {opts['seed']}..{opts['seed'] + opts['replicates'] - 1} (Gflops: their mean)"
                 if opts["replicates"] > 1 else f"seed: {opts['seed']}")
        click.echo(f"platform: {platform.label}; model: {model.label}; {seeds}")
        for runs, (d, iv) in zip(preds, summaries):
            c = runs[0].config
            click.echo(f"90 % interval, {c.label()} N={c.n} NB={c.nb} {c.p}x{c.q}: {iv.text()}"
                       + (f" ({', '.join(iv.sources)})" if iv.sources else ""))
        for runs in preds:
            if runs[0].breakdown:
                click.echo(_format_breakdown(runs[0]))
            if runs[0].phases is not None:
                click.echo(format_phases(runs[0].config, runs[0].time_s, runs[0].phases, "emulated"))
    if opts["output"]:  # after the printing: a full disk then loses no result
        write_json(opts["output"], with_warnings(doc), "the results (-o)")

"""``hplsim fit``: measurements (CSV files, calibration archives) -> a model file for
kernels, or SimGrid network options for a platform spec. See docs/fit.md."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterator

import click
import numpy as np
import pandas as pd
import yaml

from hplsim.clitypes import SEED32
from hplsim.outputs import check_dir, check_file, write_text

from hplsim import __version__
from hplsim.errors import HplsimError, warn, with_warnings
from hplsim.formats import parse_yaml, read_text
from hplsim.models.intervals import law_rsd
from hplsim.models.kernel_fit import MEAN_OPTIONS, NOISE_OPTIONS
from hplsim.models.kernels import PER_LEVELS, KernelFits, fit_kernels, parse_pieces, pooled_model_file, to_model_file
from hplsim.models.modelfile import CONDITION_VARIABLES, KERNEL_VARIABLES, load_model, save_model
from hplsim.models.piecewise import MIN_POINTS
from hplsim.models.readers import DAHU_HOST_FORMAT, Measurements, check_values, classify, read_measurements
from hplsim.models.selection import CRITERIA, DEFAULT_FOLDS, DEFAULT_TOLERANCE, parse_option
from hplsim.real.trace import TIMED_REGION

#: the kernel fitting methods (--method), the default first
FIT_METHODS = {
    "select": "per CPU or host, a mean and a noise law chosen among --option's by cross-validation (--per, "
              "--criterion); what the Dahu models use",
    "time-share": "one mean law per kernel pooled over every CPU, no noise, weighted so that the fitted durations "
                  "add up to the measured time, with dgemm's wide calls and the row swaps' aliased leading "
                  "dimension as pieces: hplsim validate's fit, the one its closed loop validated (docs/fit.md)",
}

# The built-in Dahu platform's cluster links (src/hplsim/data/dahu/platform.xml): the
# default reference for bw-factor / lat-factor when no platform is given.
DEFAULT_BANDWIDTH = "12.5GBps"
DEFAULT_LATENCY = "0.1us"
DEFAULT_LINKS = 2


# The fit's report reaches stderr only once the whole fit has succeeded: a fit that fails on
# its data then says so in its one error line, with no half of a report before it.
_report: list[str] | None = None


def _echo(msg: str = "") -> None:
    if _report is None:
        click.echo(msg, err=True)
    else:
        _report.append(msg)


def _progress(msg: str) -> None:
    """A line that tells a person at a terminal what is under way (a long fit); elsewhere
    it is part of the report."""
    if _report is not None and sys.stderr.isatty():
        click.echo(msg, err=True)
    else:
        _echo(msg)


@contextlib.contextmanager
def _held_report() -> Iterator[None]:
    global _report
    _report = []
    try:
        yield
        lines, _report = _report, None
        for line in lines:
            click.echo(line, err=True)
    finally:
        _report = None


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}" if isinstance(x, (float, np.floating)) else str(x)


# ------------------------------------------------------------------------- kernels


def _kernel_names(meas: Measurements, asked: tuple[str, ...]) -> list[str]:
    names = [k.strip() for a in asked for k in a.split(",") if k.strip()]
    for k in names:
        if k not in KERNEL_VARIABLES:
            raise HplsimError(f"unknown kernel {k!r} (known: {', '.join(sorted(KERNEL_VARIABLES))})")
    in_data = sorted({str(k) for k in meas.kernels["kernel"].dropna()})
    if not names:
        if not in_data:
            raise HplsimError("the data do not say which kernel they measured (no 'function' column): "
                              "name it with --kernel (e.g. --kernel dgemm)")
        unknown = [k for k in in_data if k not in KERNEL_VARIABLES]
        if unknown:
            raise HplsimError(f"unknown kernel(s) in the data: {', '.join(unknown)}")
        return in_data
    return names


#: fewer calls than this many per fitted parameter: the coefficients (and the selection
#: among options) rest on too little data to be trusted
CALLS_PER_PARAMETER = 10


def _small_sample_warning(kf: KernelFits) -> None:
    thin = [(label, f) for label, f in [("all calls", kf.pooled), *[(kf.group_label(k), f) for k, f in kf.groups.items()]]
            if f.n < CALLS_PER_PARAMETER * max(1, f.n_params)]
    if thin:
        label, f = thin[0]
        more = f" (and {len(thin) - 1} more group(s))" if len(thin) > 1 else ""
        warn(f"{kf.kernel}: {f.n} calls for a {f.n_params}-parameter model ({label}){more}: fewer than "
             f"{CALLS_PER_PARAMETER} calls per parameter, the fit and the choice of option are unreliable; "
             "measure more rows (hplsim calibrate --rows)")


def _kernel_calls(meas: Measurements, opts: dict[str, Any]):
    """The kernels to fit, their calls (checked), and the --piece conditions of each."""
    calls = meas.kernels
    kernels = _kernel_names(meas, opts["kernels"])
    if calls["kernel"].isna().all():
        if len(kernels) > 1:
            raise HplsimError("the data do not say which kernel each call is (no 'function' column): give one --kernel")
        calls = calls.assign(kernel=kernels[0])
    pieces = parse_pieces(opts["pieces"])
    for kernel in pieces:
        if kernel not in kernels:
            raise HplsimError(f"--piece for {kernel}, which is not fitted (kernels fitted: {', '.join(kernels)})")
    each = {}
    for kernel in kernels:
        mine = calls[calls["kernel"] == kernel]
        if mine.empty:
            found = ", ".join(sorted({str(k) for k in calls["kernel"].dropna()}))
            raise HplsimError(f"no {kernel} calls in the data (kernels found: {found})")
        variables = [v for v in KERNEL_VARIABLES[kernel] if v in mine]
        missing = [v for v in KERNEL_VARIABLES[kernel] if v not in mine]
        if missing:
            raise HplsimError(f"{kernel} needs the size column(s) {', '.join(missing)}, absent from the data")
        check_values(mine, [*variables, "duration"], f"{kernel} calls")
        each[kernel] = mine
    return calls, each, pieces


def run_kernel_fit(meas: Measurements, opts: dict[str, Any]) -> dict[str, Any]:
    calls, each, pieces = _kernel_calls(meas, opts)
    option = parse_option(opts["option"])
    fits: list[KernelFits] = []
    for kernel, mine in each.items():
        _progress(f"{kernel}: {len(mine)} calls" + (" (comparing every option: this takes a while)"
                                                 if option is None or opts["report"] else ""))
        kf = fit_kernels(mine, kernel, option=option, per=opts["per"], criterion=opts["criterion"],
                         tolerance=opts["tolerance"], folds=opts["folds"], seed=opts["seed"],
                         compare_options=opts["report"] is not None, pieces=pieces.get(kernel, ()))
        fits.append(kf)
        _print_kernel(kf)
        _small_sample_warning(kf)

    base = load_model(opts["base"]) if opts["base"] else None
    provenance = {
        "tool": f"hplsim {__version__} fit",
        "sources": meas.sources,
        "host_mapping": opts["host_format_note"],
        "kernels": {kf.kernel: {"option": f"{kf.option[0]},{kf.option[1]}", "per": kf.per, "why": kf.reason,
                                "calls": kf.pooled.n + sum(f.n for _, f in kf.pooled.pieces),
                                **({"pieces": [text for text, _ in kf.pooled.pieces]} if kf.pooled.pieces else {})}
                    for kf in fits},
    }
    if opts["base"]:
        provenance["base"] = str(opts["base"])
    model = to_model_file(fits, base, description=f"fitted by hplsim fit from {', '.join(map(_name, meas.sources))}",
                          provenance=provenance)
    save_model(model, opts["output"])
    _echo(f"wrote {opts['output']}")
    if opts["report"]:
        _kernel_report(fits, calls, opts["report"])
    return {"kind": "kernels", "method": "select", "output": str(opts["output"]),
            "kernels": [_kernel_json(kf) for kf in fits]}


def run_time_share_fit(meas: Measurements, opts: dict[str, Any]) -> dict[str, Any]:
    """``--method time-share``: one law per kernel pooled over every host and CPU, no noise
    (models/time_share.py); --piece replaces a kernel's default pieces."""
    from hplsim.models.time_share import default_pieces, fit_kernel
    from hplsim.sysinfo import l1_set_span_bytes

    if opts["per"] not in ("auto", "none"):
        raise HplsimError(f"--method time-share fits one law per kernel pooled over every host and CPU: "
                          f"--per {opts['per']} needs --method select")
    if opts["report"]:
        raise HplsimError("--report compares the options of --method select; --method time-share has one option "
                          "(--json prints its fit)")
    option = parse_option(opts["option"]) or ("M2", "N0")
    if option[1] != "N0":
        raise HplsimError(f"--method time-share fits the mean only (no noise): --option {option[0]},N0 or auto, "
                          f"not {opts['option']}")
    mean = option[0]
    _, each, given = _kernel_calls(meas, opts)
    span = max(1, l1_set_span_bytes() // 8)
    models, summaries = {}, {}
    if any(k not in given and "ld" in CONDITION_VARIABLES[k] for k in each):
        _echo(f"note: the row swaps' calls where ld % {span} == 0 (the L1 set span of this host) get a law of "
              "their own: fit on the machine that was measured, or give its pieces with --piece")
    for kernel, mine in each.items():
        pieces = [", ".join(c.text for c in conds) for conds in given[kernel]] if kernel in given \
            else default_pieces(kernel, span)
        models[kernel], s = fit_kernel(mine, kernel, pieces, mean, "hplsim fit")
        summaries[kernel] = s
        terms = ", ".join(f"{t} {v:.4g}" for t, v in s.terms.items())
        _echo(f"{kernel}: {s.calls} calls, R² {_fmt(s.r2, 5)}, factor {s.factor:.4f} (sum of the fit "
              f"{s.total_error_pct:+.2f} % before it): {terms}")
        for piece in s.pieces:
            terms = ", ".join(f"{t} {v:.4g}" for t, v in piece["mean"].items())
            _echo(f"  where {piece['when']}: {piece['calls']} calls, R² {_fmt(piece['r2'], 5)}, factor "
                  f"{piece['factor']:.4f}: {terms}")

    base = load_model(opts["base"]) if opts["base"] else None
    provenance = {
        "tool": f"hplsim {__version__} fit",
        "method": "time-share",
        "sources": meas.sources,
        "kernels": {k: {"mean": mean, "calls": s.calls, "factor": s.factor,
                        **({"pieces": [p["when"] for p in s.pieces]} if s.pieces else {})}
                    for k, s in summaries.items()},
    }
    if opts["base"]:
        provenance["base"] = str(opts["base"])
    model = pooled_model_file(models, base, description=f"fitted by hplsim fit --method time-share from "
                              f"{', '.join(map(_name, meas.sources))}", provenance=provenance)
    # each law's uncertainty from the spread of its groups (passes, traced runs): what the
    # prediction intervals carry (models/intervals.py); a kernel seen in one group has none
    fitted_rsd = {k: law_rsd(s.group_factors) for k, s in summaries.items()}
    kept = {k: v for k, v in (base.uncertainty if base else {}).items() if k not in summaries}
    model.uncertainty = {**kept, **{k: v for k, v in fitted_rsd.items() if v is not None}}
    for kernel, rsd in fitted_rsd.items():
        groups = len(summaries[kernel].group_factors)
        factors = [f for f in summaries[kernel].group_factors if f > 0]
        if rsd is not None and max(factors) > 2 * min(factors):
            warn(f"{kernel}: its calibration groups ran {max(factors) / min(factors):.1f} times apart "
                 f"(measured/fitted {min(factors):.3g} … {max(factors):.3g}): the machine was busy or "
                 f"changed between passes; its uncertainty ({100 * rsd:.2g} %) is that spread")
        _echo(f"{kernel}: uncertainty {'none (one group of calls)' if rsd is None else f'{100 * rsd:.2g} %'} "
              f"from {groups} group(s) (calibration passes, traced runs)")
    save_model(model, opts["output"])
    _echo(f"wrote {opts['output']}")
    return {"kind": "kernels", "method": "time-share", "output": str(opts["output"]),
            "kernels": [{"kernel": k, **s.to_dict()} for k, s in summaries.items()]}


def _name(source: str) -> str:
    return Path(source).name


def _print_kernel(kf: KernelFits) -> None:
    _echo(f"{kf.kernel}: per {kf.per}, model {kf.option[0]},{kf.option[1]} ({kf.reason})")
    rows = []
    for name, f in [("all (default)", kf.pooled), *((kf.group_label(k), f) for k, f in kf.groups.items())]:
        rows.append((f"{name}, other calls" if f.pieces else name, f))
        rows += [(f"{name}, {text}", pf) for text, pf in f.pieces]
    cv = {}
    for name, t in kf.tables.items():
        row = t[t["option"] == f"{kf.option[0]},{kf.option[1]}"]
        if not row.empty:
            cv[name] = row.iloc[0]
    _echo(f"  {'calls of':<28}{'n':>8}{'R²':>10}{'CV CRPS':>11}{'cover90':>9}  mean")
    for name, f in rows:
        c = cv.get(name)
        crps = _fmt(c["cv_crps"], 3) if c is not None else "-"
        cover = f"{c['cv_coverage90']:.3f}" if c is not None and pd.notna(c["cv_coverage90"]) else "-"
        terms = ", ".join(f"{t} {v:.4g}" for t, v in f.coefficients.items())
        _echo(f"  {name:<28}{f.n:>8}{f.r2:>10.5f}{crps:>11}{cover:>9}  {terms}")


def _kernel_json(kf: KernelFits) -> dict[str, Any]:
    def one(f) -> dict[str, Any]:
        out = {"n": f.n, "r2": f.r2, "mean": f.coefficients, "se": f.se, "dropped": list(f.dropped),
               "aic": f.aic, "bic": f.bic}
        if f.pieces:  # the figures above are then those of the calls outside every piece
            out["pieces"] = [{"when": text, **one(pf)} for text, pf in f.pieces]
        return out

    return {
        "kernel": kf.kernel, "per": kf.per, "option": f"{kf.option[0]},{kf.option[1]}", "why": kf.reason,
        "default": one(kf.pooled),
        "groups": {kf.group_label(k): one(f) for k, f in kf.groups.items()},
        "selection": {name: _records(t) for name, t in kf.tables.items()},
    }


def _records(t: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(t.to_json(orient="records"))


def _kernel_report(fits: list[KernelFits], calls: pd.DataFrame, outdir: Path) -> None:
    from hplsim.models.plots import kernel_plots

    check_dir(outdir, "the report (--report)")
    lines = ["# hplsim fit: kernel model selection", ""]
    for kf in fits:
        frames = [t.assign(group=name) for name, t in kf.tables.items()]
        if kf.summary is not None:
            frames.append(kf.summary.assign(group="(sum of groups)" if len(kf.tables) > 1 else "all"))
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        if not table.empty:
            table.to_csv(outdir / f"{kf.kernel}-selection.csv", index=False)
        lines += [f"## {kf.kernel}", "", f"Per {kf.per}; chosen model **{kf.option[0]},{kf.option[1]}**: {kf.reason}.", ""]
        if kf.summary is not None:
            lines += [_markdown(kf.summary), ""]
        for p in kernel_plots(kf, calls, outdir):
            lines.append(f"![{p.stem}]({p.name})")
        lines.append("")
    write_text(outdir / "selection.md", "\n".join(lines), "the report")
    _echo(f"wrote the report to {outdir}/ (selection.md, CSV tables, PNG plots)")


def _markdown(t: pd.DataFrame) -> str:
    cols = ["option", "params", "aic", "bic", "r2", "cv_crps", "cv_rmse", "cv_coverage90"]
    head = "| " + " | ".join(cols) + " |"
    sep = "|" + "---|" * len(cols)
    rows = ["| " + " | ".join(_fmt(r[c], 6) for c in cols) + " |" for _, r in t.iterrows()]
    return "\n".join([head, sep, *rows])


# ------------------------------------------------------------------------- population


def _read_head(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, nrows=5)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError):
        return pd.DataFrame()


def run_population_fit(opts: dict[str, Any]) -> dict[str, Any]:
    """``--per population``: a population law of dgemm from calibration histories or
    archives (models/population_fit.py); the other kernels come from --base."""
    from dataclasses import replace

    from hplsim.models.modelfile import HostModel, ModelFile
    from hplsim.models.population_fit import (
        fit_population, holdout_check, marginal_widths, noise_shape, read_population_data,
    )

    kernels = [k.strip() for a in opts["kernels"] for k in a.split(",") if k.strip()] or ["dgemm"]
    if len(kernels) != 1:
        raise HplsimError("--per population fits one kernel (dgemm): give --kernel dgemm")
    base = load_model(opts["base"]) if opts["base"] else None
    base_law = base.default.kernels.get("dgemm") if base and base.default else None
    histories, call_files = [], []
    for path in opts["data"]:  # call files (dgemm_raw.csv) give the noise's shape, the rest the law
        is_csv = Path(path).suffix.lower() == ".csv" and Path(path).is_file()
        (call_files if is_csv and classify(_read_head(Path(path))) == "kernel" else histories).append(path)
    if not histories:
        raise HplsimError("--per population: no calibration history or archive among the data "
                          "(call files such as dgemm_raw.csv only give the noise's shape)")
    family = opts["population_noise"]
    if family == "base":
        # The history's residual sd says how wide the noise is, not its shape: keep the base's family.
        family = base_law.family if base_law is not None and base_law.family in ("normal", "halfnormal") \
            else "halfnormal"
    shape = ()
    if call_files:
        calls = read_measurements(call_files, opts["host_format"]).kernels
        calls = calls[calls["kernel"].isna() | (calls["kernel"] == "dgemm")]
        shape = noise_shape(calls, opts["seed"])
        _echo(f"dgemm noise shape from {len(calls)} calls: mixture of {len(shape)} (weight, shift, sd in units of "
              "the drawn sigma): " + ", ".join(f"({w:.3f}, {m:+.3f}, {s:.3f})" for w, m, s in shape))
    elif family == "mixture":
        raise HplsimError("--population-noise mixture: give dgemm calls too (e.g. dgemm_raw.csv) to fit the "
                          "mixture's shape")
    table = read_population_data(histories)
    fit = fit_population(table, kernels[0], family)
    pop = replace(fit.population, noise_shape=shape)
    for note in fit.notes:
        _echo(f"note: {note}")
    _echo(f"dgemm population: {pop.fitted_on['cpus']} CPUs of {pop.fitted_on['hosts']} hosts, "
          f"{pop.fitted_on['runs']} runs, {pop.fitted_on['observations']} observations; log scale; noise {family}")
    sd = {name: np.sqrt(np.diag(m)) for name, m in (("spatial", pop.spatial), ("run", pop.run), ("cpu", pop.cpu))}
    _echo(f"  {'coefficient':<18}{'centre':>12}{'sd spatial':>12}{'sd run':>10}{'sd cpu-run':>12}")
    for i, c in enumerate(pop.coefficients):
        _echo(f"  {c:<18}{math.exp(pop.center[i]):>12.4g}{sd['spatial'][i]:>12.4f}{sd['run'][i]:>10.4f}"
              f"{sd['cpu'][i]:>12.4f}")
    held = None
    if pop.fitted_on["cpus"] >= 4:
        held = holdout_check(table, family, seed=opts["seed"])
        widths = ", ".join(f"{c} x{lo:.3f}-{hi:.3f}" for c, (lo, hi) in held["widths"].items())
        _echo(f"  held-out check: fitted on {held['train_cpus']} CPUs, {100 * held['coverage']:.1f} % of the other "
              f"{held['held_out_cpus']} CPUs' {held['held_out_runs']} runs inside the 90 % predictive region "
              f"(90 % intervals: {widths})")

    hosts: dict[str, HostModel] = {}
    if base:
        for h, hm in base.hosts.items():  # hosts that keep a dgemm of their own would not be drawn
            entry = HostModel({k: v for k, v in hm.kernels.items() if k != "dgemm"},
                              [{k: v for k, v in c.items() if k != "dgemm"} for c in hm.cpus])
            if entry.kernels or any(entry.cpus):
                hosts[h] = entry
    default = HostModel(dict(base.default.kernels), [{k: v for k, v in c.items() if k != "dgemm"}
                                                     for c in base.default.cpus]) \
        if base and base.default else HostModel()
    default.kernels["dgemm"] = pop.center_model()  # what a tool that does not draw sees: the centre CPU
    provenance = {"tool": f"hplsim {__version__} fit", "sources": [str(p) for p in opts["data"]],
                  "kernels": {"dgemm": {"per": "population", "why": "hierarchical law on log M-1 coefficients"}}}
    if opts["base"]:
        provenance["base"] = str(opts["base"])
    if held is not None:
        provenance["holdout"] = {k: held[k] for k in ("coverage", "level", "train_cpus", "held_out_runs")}
    model = ModelFile(default, hosts, f"dgemm population fitted by hplsim fit from "
                                      f"{', '.join(_name(str(p)) for p in opts['data'])}", provenance,
                      {"dgemm": pop})
    save_model(model, opts["output"])
    _echo(f"wrote {opts['output']}")
    return {"kind": "population", "output": str(opts["output"]), "kernel": "dgemm",
            "coefficients": list(pop.coefficients), "center": [float(v) for v in pop.center],
            "sd": {k: [float(x) for x in v] for k, v in sd.items()}, "fitted_on": pop.fitted_on,
            "noise_family": family, "noise_shape": [list(c) for c in shape], "notes": fit.notes, "holdout": held,
            "widths": {c: list(w) for c, w in marginal_widths(pop).items()}}


# ------------------------------------------------------------------------- network


def _link(opts: dict[str, Any]) -> tuple[float, float, str, dict | None]:
    """(bottleneck bandwidth B/s, route latency s, description, platform spec document)."""
    from hplsim.platform.spec import bandwidth as parse_bw
    from hplsim.platform.spec import duration as parse_lat
    from hplsim.platform.spec import spec_from_dict

    spec_doc = None
    if opts["platform_path"]:
        path = opts["platform_path"]
        text = read_text(path, "platform spec")
        if text.lstrip().startswith("<"):
            raise HplsimError(f"{path}: --platform needs a YAML platform spec (its smpi block is what gets written), "
                              "not SimGrid XML")
        spec_doc = parse_yaml(text, f"platform spec {path}")
        spec = spec_from_dict(spec_doc, str(path))
        bw, lat = spec.bandwidth, spec.latency
        links = 2
        route_lat = 2 * lat
        if spec.backbone_bandwidth is not None:
            bw = min(bw, spec.backbone_bandwidth)
            route_lat += spec.backbone_latency or 0.0
            links = 3
        if spec.topology != "star":
            if opts["links"] is None:
                raise HplsimError(f"{path}: a {spec.topology} route crosses several switches: say how many links "
                                  "separate two hosts with --links")
            links = opts["links"]
            route_lat = links * lat
        if opts["bandwidth"] is not None or opts["latency"] is not None:
            raise HplsimError("give either --platform or --bandwidth/--latency, not both")
        what = f"platform spec {path}: link {bw:.4g} B/s, route latency {route_lat:.4g} s ({links} links)"
        return bw, route_lat, what, spec_doc
    bw = parse_bw(opts["bandwidth"] or DEFAULT_BANDWIDTH, "--bandwidth")
    lat = parse_lat(opts["latency"] or DEFAULT_LATENCY, "--latency")
    links = opts["links"] if opts["links"] is not None else DEFAULT_LINKS
    if links < 1:
        raise HplsimError("--links must be at least 1")
    if bw <= 0:
        raise HplsimError("--bandwidth must be positive")
    default = opts["bandwidth"] is None and opts["latency"] is None
    what = (f"link {bw:.4g} B/s, latency {lat:.4g} s x {links} links = route latency {links * lat:.4g} s"
            + (" (the built-in Dahu platform's cluster links: give --bandwidth/--latency or --platform for yours)"
               if default else ""))
    return bw, links * lat, what, None


#: HPL's messages reach megabytes (panels): a fit that saw less extrapolates its last factor
NETWORK_SIZES_MIN = 4
NETWORK_LARGEST_MIN = 1 << 20


def _narrow_sizes_warning(network: pd.DataFrame) -> None:
    if "size" not in network or network.empty:
        return
    sizes = sorted(set(network["size"].astype(float)))
    if len(sizes) < NETWORK_SIZES_MIN or sizes[-1] < NETWORK_LARGEST_MIN:
        warn(f"the MPI measurements cover {len(sizes)} message size(s) from {sizes[0]:.0f} to {sizes[-1]:.0f} B: "
             f"the fitted factors are extrapolated to every other size (HPL's panels reach megabytes); "
             f"measure at least {NETWORK_SIZES_MIN} sizes up to {NETWORK_LARGEST_MIN} B or more")


def run_network_fit(meas: Measurements, opts: dict[str, Any]) -> dict[str, Any]:
    from hplsim.models.network import fit_network, segments_table, smpi_options

    bw, route_lat, link_note, spec_doc = _link(opts)
    _narrow_sizes_warning(meas.network if opts["cluster"] is None or "cluster" not in meas.network
                          else meas.network[meas.network["cluster"] == opts["cluster"]])
    fit = fit_network(meas.network, cluster=opts["cluster"], joint=not opts["separate_breakpoints"],
                      min_points=opts["min_points"], noise=opts["network_noise"], seed=opts["seed"])
    options, notes = smpi_options(fit, bw, route_lat)
    where = f"cluster {fit.cluster}" if fit.cluster else "the data"
    kind = "shared by all operations" if fit.joint else "per operation"
    _echo(f"network of {where}: breakpoints {kind}; factors relative to {link_note}")
    for op, f in fit.fits.items():
        bps = ", ".join(f"{b:.0f}" for b in f.breakpoints) or "none"
        _echo(f"  {op:<9} {fit.n[op]:>6} measurements, {len(f.segments)} segments, breakpoints (B): {bps}")
    for r in fit.threshold_reasons:
        _echo(f"  {r}")
    for n in notes:
        _echo(f"  note: {n}")

    header = [
        f"# SimGrid/SMPI options fitted by hplsim {__version__} fit from {', '.join(map(_name, meas.sources))}"
        + (f" (cluster {fit.cluster})" if fit.cluster else ""),
        f"# bw-factor and lat-factor are relative to: {link_note}",
        "# piecewise syntax: size:offset:per_byte;... (os, or, ois) and size:factor;... (bw-, lat-factor);",
        "# each entry applies from its size (bytes) up to the next one. Derivation: docs/fit.md.",
    ]
    if spec_doc is not None:
        doc = dict(spec_doc)
        doc["smpi"] = {**(doc.get("smpi") or {}), **options}
    else:
        doc = {"smpi": options}
    if fit.iprobe_reports:
        doc["mpi"] = {**(doc.get("mpi") or {}), "iprobe_reports": fit.iprobe_reports}
        _echo(f"  MPI_Iprobe reports a message that arrived during computation "
              f"{fit.iprobe_late_probes:.2f} probes late (median): iprobe_reports {fit.iprobe_reports}")
    out = opts["output"]
    write_text(out, "\n".join(header) + "\n" + yaml.safe_dump(doc, sort_keys=False, width=1000), "the network options (-o)")
    _echo(f"wrote {out}" + (" (the platform spec with its smpi block updated)" if spec_doc is not None else ""))
    if opts["report"]:
        from hplsim.models.plots import network_plot

        rep = check_dir(opts["report"], "the report (--report)")
        segments_table(fit).to_csv(rep / "network-segments.csv", index=False)
        steps = ({"all operations": next(iter(fit.fits.values())).history} if fit.joint
                 else {op: f.history for op, f in fit.fits.items()})
        write_text(rep / "network-search.txt", "".join(
            f"{who}:\n" + "".join(f"  {step}\n" for step in hist or ["no split lowers the BIC"])
            for who, hist in steps.items()), "the report")
        data = meas.network if fit.cluster is None else meas.network[meas.network["cluster"] == fit.cluster]
        network_plot(fit, data, rep / f"network{'-' + fit.cluster if fit.cluster else ''}.png")
        _echo(f"wrote the report to {rep}/ (network-segments.csv, network-search.txt, PNG plot)")
    return {
        "kind": "network", "output": str(out), "cluster": fit.cluster, "joint": fit.joint,
        "breakpoints": fit.breakpoints,
        "send_is_detached_thresh": fit.detached_threshold, "async_small_thresh": fit.async_threshold,
        "threshold_reasons": fit.threshold_reasons,
        "smpi": options, "notes": notes, "reference": {"bandwidth": bw, "route_latency": route_lat},
        "iprobe_reports": fit.iprobe_reports,
    }


# ------------------------------------------------------------------------- command


@click.command("fit")
@click.argument("data", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Model file (kernels) or YAML with an smpi: block / updated platform spec (network).")
@click.option("--kernel", "kernels", multiple=True,
              help="Kernel(s) to fit, e.g. dgemm or dgemm,dtrsm (default: every kernel in the data's "
                   "'function' column; required when the data have none, as dgemm_raw.csv).")
@click.option("--method", type=click.Choice(list(FIT_METHODS)), default="select", show_default=True,
              help="How kernel models are fitted. " + " ".join(f"{name}: {what}." for name, what in FIT_METHODS.items()))
@click.option("--option", default="auto", show_default=True,
              help=f"Model: MEAN,NOISE with MEAN in {'/'.join(MEAN_OPTIONS)} and NOISE in {'/'.join(NOISE_OPTIONS)} "
                   "(e.g. M2,N2), or auto: the simplest option within --tolerance of the best CV error.")
@click.option("--piece", "pieces", multiple=True, metavar="'KERNEL: CONDITION[, CONDITION]'",
              help="Give the calls whose sizes meet the conditions a law of their own (the model file's pieces), "
                   "e.g. 'dgemm: n > m'; repeatable: the first piece that holds claims a call, the other calls "
                   "make the kernel's own law.")
@click.option("--per", type=click.Choice([*PER_LEVELS, "population"]), default="auto", show_default=True,
              help="One model per CPU, per host, or none (pooled only); auto = the finest the data identify. "
                   "The pooled fit is always written as the 'default' entry. population: a law of dgemm's "
                   "coefficients across CPUs and runs, from calibration histories or archives (docs/population.md).")
@click.option("--population-noise", type=click.Choice(["base", "normal", "halfnormal", "mixture"]), default="base",
              show_default=True,
              help="--per population: the drawn hosts' within-run noise family; base = the --base model's dgemm "
                   "family (else halfnormal); mixture needs dgemm calls among the data (e.g. dgemm_raw.csv).")
@click.option("--host-format", default=DAHU_HOST_FORMAT, show_default=True,
              help="Host name of data that give a node number instead of a host (the Dahu CSVs): {node}, "
                   "{node-1}, {node+1} are replaced. The default maps Dahu node i+1 to dahu-i.grid5000.fr, the "
                   "built-in platform's host (node 5 -> dahu-4.grid5000.fr). The cpu column is the CPU (socket) "
                   "index within the host; our archives carry real host names.")
@click.option("--criterion", type=click.Choice(CRITERIA), default="crps", show_default=True,
              help="What --option auto compares: CV CRPS or CV RMSE (simplest within tolerance), or lowest AIC/BIC.")
@click.option("--tolerance", type=float, default=DEFAULT_TOLERANCE, show_default=True,
              help="Relative slack of the 'simplest within' rule (0.01 = 1 %).")
@click.option("--folds", type=click.IntRange(2, 50), default=DEFAULT_FOLDS, show_default=True,
              help="k of the k-fold cross-validation.")
@click.option("--seed", type=SEED32, default=0, show_default=True, help="Seed of the CV folds and mixture fits.")
@click.option("--base", type=click.Path(path_type=Path),
              help="Start from this model file: fitted kernels replace its entries, other kernels are kept.")
@click.option("--report", type=click.Path(path_type=Path),
              help="Write the selection tables (every option's AIC, BIC, CV errors) and PNG plots here.")
@click.option("--network", is_flag=True, help="Fit the MPI measurements in the data (default when there are "
                                                "no kernel calls).")
@click.option("--cluster", help="Cluster to fit when the data hold several (mpi_calibration.csv: dahu, gros, ...).")
@click.option("--platform", "platform_path", type=click.Path(path_type=Path),
              help="Network: a YAML platform spec; its links are the reference of the factors and -o gets a copy "
                   "of it with the fitted smpi options.")
@click.option("--bandwidth", help=f"Network: bandwidth of a cluster link, e.g. 12.5GBps [default: {DEFAULT_BANDWIDTH}].")
@click.option("--latency", help=f"Network: latency of one link, e.g. 0.1us [default: {DEFAULT_LATENCY}].")
@click.option("--links", type=int, help=f"Network: links on the route between two hosts [default: {DEFAULT_LINKS}, "
                                         "a SimGrid cluster without backbone].")
@click.option("--separate-breakpoints", is_flag=True,
              help="Network: segment each operation on its own instead of sharing the breakpoints.")
@click.option("--min-points", type=click.IntRange(3, None), default=MIN_POINTS, show_default=True,
              help="Network: fewest measurements per segment.")
@click.option("--network-noise", type=click.Choice(["normal", "mixture"]), default="normal", show_default=True,
              help="Network: noise model per segment (in the report).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary of the fit on stdout.")
def fit(**opts: Any) -> None:
    """Fit kernel models (-> model file) or network models (-> SimGrid options) from
    measurements: CSV files or hplsim calibration archives.

    \b
    hplsim fit dgemm_raw.csv --kernel dgemm --per cpu -o model.yaml
    hplsim fit calib.zip --option M2,N2 --report report/ -o model.yaml
    hplsim fit dgemm.zip dtrsm.zip trace.zip --method time-share -o model.yaml
    hplsim fit mpi_calibration.csv --network --cluster dahu -o net.yaml
    """
    with _held_report():
        _fit(opts)


def _fit(opts: dict[str, Any]) -> None:
    check_file(opts["output"], "the output (-o)")  # before the work, not after it
    if opts["report"]:
        check_dir(opts["report"], "the report (--report)")
    if opts["per"] == "population":
        if opts["method"] != "select":
            raise HplsimError(f"--per population is a law of its own: not with --method {opts['method']}")
        summary = run_population_fit(opts)
        if opts["as_json"]:
            json.dump(_clean(summary), sys.stdout, indent=2, allow_nan=False)
            sys.stdout.write("\n")
        return
    host_format = opts["host_format"]
    opts["host_format_note"] = (f"data with a node number: host = {host_format!r}; cpu = CPU index within the host; "
                                "a rank's CPU is its local rank modulo the number of CPUs listed")
    meas = read_measurements(opts["data"], host_format)
    # a traced HPL run's archive also times HPL's whole solve, once per rank: not a kernel call
    meas.kernels = meas.kernels[meas.kernels["kernel"] != TIMED_REGION]
    for source, metadata in meas.metadata.items():
        status = metadata.get("status")
        if status not in (None, "complete"):
            _echo(f"note: {source} is a calibration marked {status!r} "
                  f"({metadata.get('abort_reason', 'no reason given')}): fitting what it measured")
    has_kernels, has_network = not meas.kernels.empty, not meas.network.empty
    network = opts["network"] or (has_network and not has_kernels and not opts["kernels"])
    if network:
        if opts["method"] != "select":
            raise HplsimError(f"--method {opts['method']} fits kernels: the network has one fit (leave --method out)")
        if not has_network:
            raise HplsimError("--network: no MPI measurements in the data")
        if opts["kernels"]:
            raise HplsimError("--kernel and --network: fit kernels and the network in two runs (two outputs)")
        summary = run_network_fit(meas, opts)
    else:
        if not has_kernels:
            raise HplsimError("no kernel calls in the data")
        if has_network:
            _echo("note: the MPI measurements in the data are not used; fit them with --network")
        summary = run_time_share_fit(meas, opts) if opts["method"] == "time-share" else run_kernel_fit(meas, opts)
    if opts["as_json"]:
        json.dump(_clean(with_warnings(summary)), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")


def _clean(x: Any) -> Any:
    """Plain JSON: numpy numbers to Python, NaN and infinities to null."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x

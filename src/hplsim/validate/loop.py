"""``hplsim validate``: the closed loop on this machine — calibrate, fit, predict, run the
real HPL, compare.

    report = validate_local(default_configs(), Path("validation"), repeat=3)
    report.rows[0].error_pct, report.summary()

Each stage is a call into the package that owns it: the configurations and the designs
(`calibrate.hpl_designs`), the calibrations (`calibrate.local`), the traced and the real
runs (`real`), the fit (`models.time_share`), the platform (`models.local_platform`), the
predictions (`predict`), the comparison and its files (`report.validation`).

Stages and their artefacts (all in the output directory, each reusable with --reuse):

    calibration/pass-I/dgemm.zip, dtrsm.zip
                                       dgemm/dtrsm on the cores HPL uses (HPL's call shapes),
                                       R + 1 passes: before the real runs, after each round
    calibration/pass-I/trace.zip       in each pass too, traced real HPL runs at a smaller N:
                                       the other kernels
    calibration/probe.json             the machine probe around each pass
    calibration/mpi.zip                MPI between two local ranks
    model.yaml                         kernel models (hplsim fit's format)
    platform.yaml                      this machine: one node, the fitted SMPI options
    predictions.json                   hplsim predict, one simulation per configuration
    real.zip                           hplsim run-real, R interleaved rounds (the calibration's
                                       passes between them), short configurations more often
    validation.csv / .png / .md        the comparison

See docs/validate.md; the command is `hplsim.validate.cli`.
"""

from __future__ import annotations

import json
import math
import socket
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

import yaml

from hplsim.calibrate import local as cal
from hplsim.calibrate.hpl_designs import trace_configs
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.models.time_share import fit_models
from hplsim.outputs import check_dir, write_json, write_text
from hplsim.models.local_platform import fit_network_options, local_platform_spec
from hplsim.real.run import DEFAULT_TIMEOUT_S, Launch, available_cores, check_configs, read_results, run_real
from hplsim.real.trace import trace_kernels
from hplsim.report.validation import Report, Row, calibration_drift, write_report

#: a configuration runs until its runs add up to this many seconds of HPL time (at least
#: --repeat runs): the median of five 1-s runs (N = 5000) moved by 4–5 % (bootstrap, runs
#: 10–12), that of five 8-s runs by 2 % (lab notebook E22)
DEFAULT_MIN_SECONDS = 10.0


def _say(progress: Callable[[str], None] | None) -> Callable[[str], None]:
    return progress or (lambda msg: None)


def validate_local(
    configs: Sequence[HplConfig],
    outdir: Path,
    repeat: int = 3,
    seed: int = 0,
    settings: cal.CalibrationSettings | None = None,
    model_path: Path | None = None,
    platform_path: Path | None = None,
    reuse: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
    min_seconds: float = DEFAULT_MIN_SECONDS,
) -> Report:
    """Calibrate, fit, predict and run every configuration for real on this host's cores;
    write the comparison (CSV, PNG, Markdown) in `outdir`. Each configuration runs `repeat`
    times, a short one more (`run_real`'s `min_seconds`)."""
    from hplsim.platform.spec import load_platform
    from hplsim.predict import ModelSource, predict
    from hplsim.real.probe import PROBE_SHAPE, MachineProbe

    say = _say(progress)
    configs = list(configs)
    if not configs:
        raise HplsimError("no configuration to validate")
    if repeat < 1:
        raise HplsimError(f"--repeat must be at least 1, got {repeat}")
    settings = settings or cal.CalibrationSettings()
    launch = Launch.choose("local")
    ranks = max(c.ranks for c in configs)
    cores = available_cores()
    check_configs(configs, launch)  # before anything runs: ranks vs cores, memory
    cores = cores[:ranks]
    outdir = Path(outdir)
    caldir = outdir / "calibration"
    check_dir(caldir, "the calibrations")
    report = Report([], outdir)
    report.files["directory"] = str(outdir)

    def stage(name: str):
        t0 = time.monotonic()

        class _S:
            def __enter__(self):
                say(f"{name} …")

            def __exit__(self, *exc):
                report.stages[name] = round(time.monotonic() - t0, 1)
                if exc[0] is None:
                    say(f"{name}: done in {report.stages[name]:.0f} s")
                return False

        return _S()

    def have(path: Path) -> bool:
        return reuse and path.exists()

    # the machine's speed, measured around the calibration and around every real run, tells
    # which real runs met the machine the models were fitted on (E19)
    probe = MachineProbe(cores, seed)
    probe_file = caldir / "probe.json"
    reference: float | None = None

    # 1. kernels. The dgemm/dtrsm calibration is measured in passes spread over the real
    # runs' period, one before the first run and one after each round of repetitions: this
    # machine's speed for HPL's call shapes moves by several % within minutes (E19, E21), and
    # a model fitted on the first minute alone was off by as much as it moved.
    calibrated_here = model_path is None
    passes = repeat + 1
    pass_dirs = [caldir / f"pass-{i}" for i in range(passes)]
    # about twice the repetitions of one calibration in all, whatever R (the old calibration
    # and its drift measurement)
    pass_settings = replace(settings, blas_repetitions=max(1, math.ceil(2 * settings.blas_repetitions / passes)))
    probes_taken: dict[str, list[float]] = {}
    if reuse and probe_file.exists():
        probes_taken = dict(json.loads(probe_file.read_text()).get("around_calibration_passes", {}))

    measured: set[int] = set()  # the passes this invocation took (have() only knows --reuse)

    # The traced runs (the other kernels) are taken in every pass too: the row swaps and
    # copies are memory-bound, and their time per element moved 1.5–4x between runs minutes
    # apart (E25); one traced run per configuration was one draw of that.
    def calibration_pass(i: int) -> None:
        if i in measured or all(have(pass_dirs[i] / f"{f}.zip") for f in ("dgemm", "dtrsm", "trace")):
            return
        when = "before the real runs" if i == 0 else f"after round {i} of the real runs"
        n_probes = settings.reference_probes if i == 0 else 1  # one on each side of the later passes
        with stage(f"calibrating dgemm and dtrsm on cores {','.join(map(str, cores))}, pass {i + 1}/{passes} "
                   f"({when})"):
            before = [probe.measure() for _ in range(n_probes)]
            cal.calibrate_blas_for(configs, pass_dirs[i], cores, seed, pass_settings)
            after = [probe.measure() for _ in range(n_probes)]
        tconfigs = trace_configs(configs, settings.trace_n)
        with stage(f"tracing the other kernels in {len(tconfigs)} real HPL run(s) at N = "
                   f"{', '.join(sorted({str(c.n) for c in tconfigs}))}, pass {i + 1}/{passes}"):
            trace_kernels(tconfigs, pass_dirs[i] / "trace.zip", launch)
        probes_taken[str(i)] = before + after
        measured.add(i)
        probe_file.write_text(json.dumps({**probe.describe(), "around_calibration_passes": probes_taken},
                                         indent=1) + "\n")

    if calibrated_here:
        model_path = outdir / "model.yaml"
        calibration_pass(0)
    else:
        report.notes.append(f"kernel models given: {model_path} (no kernel calibration)")

    # 2. network: calibrate MPI between two local ranks and fit the SMPI options
    if platform_path is None:
        platform_path = outdir / "platform.yaml"
        if not have(platform_path):
            smpi: dict[str, str] = {}
            mpi_block: dict[str, str] = {}
            if ranks >= 2:
                mpi = caldir / "mpi.zip"
                if not have(mpi):
                    with stage("calibrating MPI between two local ranks"):
                        cal.calibrate_network(mpi, cores, seed, settings)
                with stage("fitting the network"):
                    smpi, mpi_block, notes = fit_network_options(mpi, seed)
                report.notes += [f"network fit: {n}" for n in notes]
            else:
                report.notes.append("one rank: no communication, no MPI calibration")
            spec = local_platform_spec(ranks, smpi, mpi=mpi_block)
            header = (f"# {socket.gethostname()} as a platform: one node, {ranks} rank slots; messages between "
                      "ranks cross the node's loopback link,\n# whose SMPI factors and overheads were fitted "
                      "from calibration/mpi.zip (hplsim validate, docs/validate.md)\n")
            write_text(platform_path, header + yaml.safe_dump(spec, sort_keys=False, width=1000), "the platform")
        report.files["platform"] = str(platform_path)
    else:
        report.notes.append(f"platform given: {platform_path} (no MPI calibration)")

    # 3. real runs, with the calibration's passes between their rounds
    real_path = outdir / "real.zip"
    results = read_results(real_path, configs, repeat) if have(real_path) else None
    if results is None:
        more = f", short ones until {min_seconds:g} s of HPL time" if min_seconds > 0 and repeat > 1 else ""
        with stage(f"running the real HPL: {len(configs)} configuration(s) x {repeat}{more} (interleaved, "
                   "shuffled)"):
            done = run_real(configs, launch, repeat=repeat, out=real_path, shuffle=True, seed=seed,
                            timeout=timeout, progress=progress, probe=probe, min_seconds=min_seconds,
                            between_rounds=(lambda r: calibration_pass(r + 1)) if calibrated_here else None)
        results = done.results
    report.files["real"] = str(real_path)

    # 4. fit, on every pass; the drift: the same calls, first pass against last
    if calibrated_here:
        for i in range(1, passes):
            calibration_pass(i)  # the last one, and any a reused archive came without
        if not have(model_path):
            with stage("fitting the kernel models"):
                archives = [d / f"{f}.zip" for d in pass_dirs for f in ("dgemm", "dtrsm")]
                kernels = fit_models(archives, [d / "trace.zip" for d in pass_dirs], model_path, seed=seed)
            (outdir / "kernel-fits.json").write_text(json.dumps(kernels, indent=1, default=float) + "\n")
        report.files["model"] = str(model_path)
        report.drift = calibration_drift(pass_dirs[0] / "dgemm.zip", pass_dirs[-1] / "dgemm.zip")
        report.notes.append(f"kernel calibration: {passes} passes of {pass_settings.blas_repetitions} "
                            "repetition(s), one before the real runs and one after each round; the models are "
                            "fitted on all of them")
        taken = [x for i in range(passes) for x in probes_taken.get(str(i), [])]
        if taken:
            # a median: one probe caught in a dip (E19 saw 28 against 50) must not move the reference
            reference = statistics.median(taken)
            report.probe.update(calibration=taken, reference=reference)
        else:
            report.notes.append("calibration reused without its machine probe (calibration/probe.json): "
                                "the real runs' machine speed is not compared with the calibration's")

    # 5. predict
    platform = load_platform(platform_path)
    model = ModelSource.from_path(model_path)
    predictions = {}
    with stage(f"predicting {len(configs)} configuration(s)"):
        for c in configs:
            predictions[c] = predict(c, platform, model, seed, timeout)
    write_json(outdir / "predictions.json", [p.to_dict() for p in predictions.values()], "the predictions", indent=1)
    report.files["predictions"] = str(outdir / "predictions.json")

    # 6. compare
    report.add_real_runs(results, reference, PROBE_SHAPE)
    for c, res in zip(configs, results):
        p = predictions[c]
        report.rows.append(Row(c, p.gflops, p.time_s, p.sim_wall_s, res, reference))
    write_report(report)
    return report

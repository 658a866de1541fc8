"""Where a prediction's time goes against a traced real run's: kernel by kernel, and between
the kernels.

A traced real run (`hplsim run-real --trace`) times every call of the kernels the emulation
models, inside HPL's timed region. Two questions split a closed-loop error in two:

- **the kernel models**: what the model file gives for the very calls the real run made,
  against their measured durations (`kernel_totals`);
- **the time between the kernels** (MPI, waiting, and HPL's own code that no model prices):
  each gap between two consecutive calls of a rank, labelled by the two calls around it
  (`gaps`), from the real run and from a simulated trace (`predict --trace`) alike, so that
  the same label can be compared (lab notebook E88).

In both kinds of run, a rank's calls and gaps tile its timed region.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.calibrate.archive import read_archive
from hplsim.errors import HplsimError
from hplsim.models.modelfile import ModelFile
from hplsim.real.trace import TIMED_REGION
from hplsim.report.calibration_figures import expected_durations


@dataclass
class TracedRuns:
    """The kernel calls of a traced real archive, each run's HPL parameters and regions."""

    calls: pd.DataFrame  # run, rank, function, start, end (s), duration, the sizes (m, n, k, ld, …), host, cpu
    regions: pd.DataFrame  # run, rank, start, end: HPL_pdgesv on each rank
    runs: pd.DataFrame  # results/hpl.csv: one row per run (run, n, nb, p, q, …, gflops)


def read_traced(path: Path) -> TracedRuns:
    """A `run-real --trace` archive's calls, regions and runs."""
    archive = read_archive(path)
    if not archive.has_table("kernels"):
        raise HplsimError(f"{path}: no traced kernel calls (results/kernels.csv); run `hplsim run-real --trace`")
    raw = archive.table("kernels").rename(columns={"order": "run"})
    raw["end"] = raw["start"] + raw["duration"]
    region = raw["function"] == TIMED_REGION
    return TracedRuns(raw[~region].reset_index(drop=True),
                      raw.loc[region, ["run", "rank", "start", "end"]].reset_index(drop=True),
                      archive.table("hpl").rename(columns={"order": "run"}))


def simulated_calls(events: pd.DataFrame, meta: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A simulated trace's kernel intervals and regions in `TracedRuns`' columns (run 0)."""
    run = 0
    kernels = events[events["kind"] == "kernel"]
    calls = pd.DataFrame({"run": run, "rank": kernels["rank"].to_numpy(), "function": kernels["name"].astype(str).to_numpy(),
                          "start": kernels["start_s"].to_numpy(), "end": kernels["end_s"].to_numpy()})
    calls["duration"] = calls["end"] - calls["start"]
    regions = pd.DataFrame({"run": run, "rank": np.arange(len(meta["region_start_s"])),
                            "start": meta["region_start_s"], "end": meta["region_end_s"]})
    return calls, regions


def modelled(calls: pd.DataFrame, model: ModelFile) -> np.ndarray:
    """The model's expected duration of each call, on the call's host and CPU
    (`report.calibration_figures.expected_durations`, the figures' own reading of a model
    against measured calls). A kernel the model has no law for is an error: its calls
    would silently count as free."""
    named = calls.rename(columns={"function": "kernel"}).assign(call=np.arange(len(calls)))
    try:
        expected = expected_durations(model, named)
    except HplsimError:
        expected = named.iloc[:0].assign(expected=0.0)
    missing = sorted(set(named["kernel"]) - set(expected["kernel"]))
    if missing:
        raise HplsimError(f"the model file has no law for {', '.join(map(str, missing))}, which the traced run calls")
    out = np.zeros(len(calls))  # a call whose law gives 0 is left out of `expected`
    out[expected["call"].to_numpy()] = expected["expected"].to_numpy()
    return out


def _inside(calls: pd.DataFrame, regions: pd.DataFrame) -> pd.DataFrame:
    both = calls.merge(regions, on=["run", "rank"], suffixes=("", "_region"))
    keep = (both["start"] >= both["start_region"]) & (both["end"] <= both["end_region"])
    return both[keep].sort_values(["run", "rank", "start"], kind="stable")


def rank_totals(calls: pd.DataFrame, regions: pd.DataFrame) -> pd.DataFrame:
    """Per run and rank: its region, the calls' measured total, the model's (when `calls`
    has a `model` column), and the time between calls (the region less the calls)."""
    inside = _inside(calls, regions)
    agg = {"kernels": ("duration", "sum")}
    if "model" in inside:
        agg["model"] = ("model", "sum")
    out = inside.groupby(["run", "rank"]).agg(**agg).reset_index()
    out = out.merge(regions.assign(region=regions["end"] - regions["start"])[["run", "rank", "region"]], on=["run", "rank"])
    out["between"] = out["region"] - out["kernels"]
    return out


def kernel_totals(calls: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Measured and modelled totals of each kernel over groups of runs (`by`: columns of
    `calls`), and the model's error on them (modelled / measured − 1, in %)."""
    out = calls.groupby([*by, "function"]).agg(calls=("duration", "size"), measured=("duration", "sum"),
                                               model=("model", "sum")).reset_index()
    out["error_pct"] = 100.0 * (out["model"] / out["measured"] - 1.0)
    return out


def gaps(calls: pd.DataFrame, regions: pd.DataFrame) -> pd.DataFrame:
    """Every gap between two consecutive calls of a rank inside its region, labelled
    ``before>after`` by the two calls' functions; the time from the region's start to the
    first call and from the last call to its end are labelled ``start>…`` and ``…>end``."""
    rows = []
    for (run, rank), c in _inside(calls, regions).groupby(["run", "rank"], sort=True):
        names = np.concatenate([["start"], c["function"].to_numpy(str), ["end"]])
        ends = np.concatenate([[c["start_region"].iloc[0]], c["end"].to_numpy()])
        starts = np.concatenate([c["start"].to_numpy(), [c["end_region"].iloc[0]]])
        rows.append(pd.DataFrame({"run": run, "rank": rank, "label": np.char.add(np.char.add(names[:-1], ">"), names[1:]),
                                  "seconds": starts - ends}))
    if not rows:
        return pd.DataFrame(columns=["run", "rank", "label", "seconds"])
    return pd.concat(rows, ignore_index=True)

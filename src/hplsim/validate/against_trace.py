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
from hplsim.models.modelfile import CONDITION_VARIABLES, ModelFile
from hplsim.real.trace import TIMED_REGION

#: a kernel call or a timed region, in either kind of run: rank, start and end in seconds
INTERVAL_COLUMNS = ("run", "rank", "function", "start", "end")


@dataclass
class TracedRuns:
    """The kernel calls of a traced real archive, each run's HPL parameters and regions."""

    calls: pd.DataFrame  # INTERVAL_COLUMNS + the sizes (m, n, k, ld, …) + duration
    regions: pd.DataFrame  # run, rank, start, end: HPL_pdgesv on each rank
    runs: pd.DataFrame  # results/hpl.csv: one row per run (order, n, nb, p, q, …, gflops)


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


def simulated_calls(events: pd.DataFrame, meta: dict, run: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A simulated trace's kernel intervals and regions in `TracedRuns`' columns."""
    kernels = events[events["kind"] == "kernel"]
    calls = pd.DataFrame({"run": run, "rank": kernels["rank"].to_numpy(), "function": kernels["name"].astype(str).to_numpy(),
                          "start": kernels["start_s"].to_numpy(), "end": kernels["end_s"].to_numpy()})
    calls["duration"] = calls["end"] - calls["start"]
    regions = pd.DataFrame({"run": run, "rank": np.arange(len(meta["region_start_s"])),
                            "start": meta["region_start_s"], "end": meta["region_end_s"]})
    return calls, regions


def modelled(calls: pd.DataFrame, model: ModelFile, host: str) -> np.ndarray:
    """The model's expected duration of each call (rank `r` on its host's CPU r modulo the
    model's CPUs, as the emulation resolves it)."""
    out = np.full(len(calls), np.nan)
    cpus = model.cpus_of(host)
    for (function, cpu), group in calls.groupby([calls["function"], calls["rank"] % cpus]):
        law = model.resolve(host, int(cpu)).get(str(function))
        if law is None:
            raise HplsimError(f"the model file has no law for {function}, which the traced run calls")
        names = set(law.variables) | set(CONDITION_VARIABLES[str(function)])
        out[group.index.to_numpy()] = law.predict({v: group[v].to_numpy(float) for v in names})
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

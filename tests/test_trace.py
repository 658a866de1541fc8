"""predict --trace: what the trace records, checked against the simulation's own accounts
(the kernel report of --breakdown, HPL's time) and against an untraced run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hplsim.emulate.trace import EVENTS, META, rank_breakdown, read_trace
from hplsim.errors import HplsimError
from test_sweep_run import hplsim

CONFIG = ["-N", "8000", "--nb", "128", "-P", "4", "-Q", "4"]  # the acceptance check's run
US = 1e-6


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same configuration untraced, traced with the kernel report, and traced on 2 panels."""
    d = tmp_path_factory.mktemp("trace")
    plain = json.loads(hplsim("predict", *CONFIG, "--json", cwd=d).stdout)[0]
    full = json.loads(hplsim("predict", *CONFIG, "--json", "--breakdown", "--trace", "full", "--keep", "keep",
                             cwd=d).stdout)[0]
    part = json.loads(hplsim("predict", *CONFIG, "--json", "--trace", "part", "--trace-panels", "2", cwd=d).stdout)[0]
    return d, plain, full, part


def kernel_report(keep: Path) -> dict[int, float]:
    """Per rank, the modelled compute time the runtime itself summed (HPLSIM_KERNEL_TIME)."""
    (report,) = keep.glob("*/kernels.txt")
    return {int(f[1]): float(f[2]) for f in (line.split() for line in report.read_text().splitlines())
            if f[0] == "HPLSIM_KERNEL_TIME"}


def test_tracing_changes_no_simulated_time(runs):
    _, plain, full, part = runs
    assert plain["time_s"] == full["time_s"] == part["time_s"]


def test_breakdown_agrees_with_predict_breakdown_to_the_microsecond(runs):
    d, _, full, _ = runs
    trace = read_trace(d / "full")
    b = rank_breakdown(trace).set_index("rank")
    own = kernel_report(d / "keep")
    assert sorted(own) == list(range(16)) == list(b.index)
    assert max(abs(b.loc[r, "compute_s"] - own[r]) for r in own) < US
    mpi = (b["transfer_s"] + b["wait_s"]).sort_values().to_numpy()
    compute = b["compute_s"].sort_values().to_numpy()
    for name, values in (("compute_s", compute), ("mpi_s", mpi)):
        ref = full["breakdown"][name]
        assert abs(values[0] - ref["min"]) < US and abs(values[-1] - ref["max"]) < US
        assert abs(values[len(values) // 2] - ref["median"]) < US
    assert np.allclose(b.sum(axis=1), full["time_s"], atol=US)
    assert (b >= -1e-12).all().all() and (b["wait_s"] > 0).all() and (b["transfer_s"] > 0).all()


def test_intervals_tile_hpl_timed_region(runs):
    d, _, full, _ = runs
    trace = read_trace(d / "full")
    ev = trace.events
    region = trace.regions
    assert (region[:, 1] - region[:, 0]).max() == pytest.approx(full["time_s"], abs=1e-12)
    for rank, g in ev.groupby("rank"):
        start, end = g["start_s"].to_numpy(), g["end_s"].to_numpy()
        assert (end >= start).all()
        assert (start[1:] - end[:-1]).min() > -1e-9  # no overlap
        assert abs((end - start).sum() - (region[rank, 1] - region[rank, 0])) < US  # no gap


def test_records_what_hpl_does(runs):
    d, _, _, _ = runs
    ev = read_trace(d / "full").events
    mpi = ev[ev["kind"] == "mpi"]
    assert set(ev["phase"].astype(str)) >= {"fact", "bcast", "swap", "update", "trsv"}
    assert ev["panel"].max() == 8000 // 128 - 1 + (8000 % 128 > 0)
    assert mpi["peer"].dropna().between(0, 15).all()
    messages = mpi[mpi["name"].isin(["MPI_Send", "MPI_Recv", "MPI_Wait(recv)"])]
    assert messages["peer_start_s"].notna().all()  # every send found its receive and back
    assert (messages["bytes"] > 0).all()
    assert ((ev["wait_s"] >= 0) & (ev["wait_s"] <= ev["end_s"] - ev["start_s"] + 1e-15)).all()
    kernels = ev[ev["kind"] == "kernel"]
    assert (kernels["wait_s"] == 0).all() and set(kernels["name"].astype(str)) >= {"dgemm", "dtrsm"}
    # Panel factorisation is the pivot search: its messages stay in a process column.
    fact = mpi[(mpi["phase"] == "fact") & mpi["peer"].notna()]
    assert ((fact["rank"] % 4) == (fact["peer"] % 4)).all()  # row-major 4x4: column = rank % Q


def test_first_panels_are_the_full_trace_cut(runs):
    d, _, _, _ = runs
    full = read_trace(d / "full").events
    part = read_trace(d / "part")
    assert part.meta["panels"] == 2 and set(part.events["panel"]) == {0, 1}
    def comparable(ev: pd.DataFrame) -> pd.DataFrame:
        return ev.drop(columns=["wait_s", "peer_start_s"]).astype({"name": str}).reset_index(drop=True)

    pd.testing.assert_frame_equal(comparable(part.events), comparable(full[full["panel"].between(0, 1)]))


def test_mixed_or_damaged_traces_are_refused(runs, tmp_path):
    d, _, _, _ = runs
    mixed = tmp_path / "mixed"
    shutil.copytree(d / "full", mixed)
    shutil.copy(d / "part" / EVENTS, mixed / EVENTS)
    with pytest.raises(HplsimError, match="from another run"):
        read_trace(mixed)
    edited = tmp_path / "edited"
    shutil.copytree(d / "full", edited)
    meta = json.loads((edited / META).read_text())
    meta["time_s"] *= 0.9
    (edited / META).write_text(json.dumps(meta))
    with pytest.raises(HplsimError, match="run id"):
        read_trace(edited)
    cut = tmp_path / "cut"
    shutil.copytree(d / "full", cut)
    data = (cut / EVENTS).read_bytes()
    (cut / EVENTS).write_bytes(data[: len(data) // 2])
    with pytest.raises(HplsimError, match="not a readable Parquet file"):
        read_trace(cut)


def test_trace_options_refused_in_one_line(tmp_path):
    for args, message in ((["-N", "2000", "--trace-panels", "2"], "need --trace DIR"),
                          (["-N", "2000,3000", "--trace", "t"], "one configuration")):
        out = hplsim("predict", *args, "-P", "2", "-Q", "2", cwd=tmp_path, check=False)
        assert out.returncode != 0 and out.stderr.count("\n") == 1
        assert out.stderr.startswith("hplsim: error:") and message in out.stderr
    assert not (tmp_path / "t").exists()


def test_paje_trace_is_smpi_own(tmp_path):
    hplsim("predict", "-N", "1000", "--nb", "64", "-P", "2", "-Q", "2", "--trace", "t", "--trace-panels", "1",
           "--trace-paje", cwd=tmp_path)
    paje = (tmp_path / "t" / "smpi.paje").read_text()
    head = paje[:20000]
    assert "%EventDef PajeDefineContainerType" in head and '"rank-3"' in head
    # the ranks' modelled compute shows as SMPI's computing states (pushed with event 12):
    # with a Paje trace the runtime injects it as executions, not as the sleeps it uses
    # otherwise, which SMPI does not trace
    import re
    computing = re.search(r"^5 (\d+) \d+ computing ", paje, re.M).group(1)
    assert len(re.findall(rf"^12 \S+ \S+ \S+ {computing}$", paje, re.M)) > 50


def test_inside_finds_the_nested_calls_made_between_two_steps_of_a_phase():
    """validation.md E57/E61: a look-ahead broadcast's call is inside the swap when the
    rank's calls of other phases just before and just after it are both the swap's."""
    import pandas as pd

    from hplsim.emulate.trace import inside

    rows = [  # rank, start, phase
        (0, 0.0, "swap"), (0, 1.0, "bcast"), (0, 2.0, "swap"),    # inside
        (0, 3.0, "bcast"), (0, 4.0, "update"),                    # after the swap: not
        (1, 0.0, "bcast"), (1, 1.0, "swap"),                      # before any: not
        (1, 2.0, "swap"), (1, 2.5, "bcast"), (1, 2.7, "bcast"), (1, 3.0, "swap"),  # both inside
        (1, 4.0, "bcast"),                                        # last event: not
    ]
    events = pd.DataFrame(rows, columns=["rank", "start_s", "phase"])
    calls = events.phase == "bcast"
    assert inside(events, calls, "swap", "bcast").tolist() == [True, False, False, True, True, False]
    assert inside(events, calls, "update", "bcast").tolist() == [False] * 6
    with pytest.raises(ValueError):
        inside(events.iloc[::-1], calls.iloc[::-1], "swap", "bcast")


def test_during_names_the_event_each_rank_was_in_at_a_time():
    """validation.md E62: what the receiver of a forwarded panel was doing when the
    forward began; the later event where two meet, empty outside any or for a rank
    without events."""
    import pandas as pd

    from hplsim.emulate.trace import during

    rows = [  # rank, start, end, phase, name, panel
        (0, 0.0, 1.0, "swap", "MPI_Send", 3), (0, 1.0, 2.0, "update", "dgemm", 2),
        (1, 0.5, 0.7, "bcast", "MPI_Recv", 4), (1, 3.0, 4.0, "fact", "dgetrf", 5),
    ]
    events = pd.DataFrame(rows, columns=["rank", "start_s", "end_s", "phase", "name", "panel"])
    got = during(events, np.array([0, 0, 0, 1, 1, 1, 2]), np.array([0.5, 1.0, 2.5, 0.6, 2.0, 4.0, 0.0]))
    assert got.phase.tolist() == ["swap", "update", "", "bcast", "", "fact", ""]
    assert got.name.tolist() == ["MPI_Send", "dgemm", "", "MPI_Recv", "", "dgetrf", ""]
    assert got.panel.tolist() == [3, 2, -2, 4, -2, 5, -2]
    with pytest.raises(ValueError):
        during(events.iloc[::-1], np.array([0]), np.array([0.5]))


def test_held_by_follows_blocked_calls_to_the_rank_that_is_not_waiting():
    """validation.md E62: rank 0's forward waits for rank 1, blocked in a roll send to
    rank 2, which computes; a call past its waiting part (transferring) holds nothing up
    further; a rank outside any event holds itself; a cycle of waits is refused."""
    import pandas as pd

    from hplsim.emulate.trace import held_by

    rows = [  # rank, start, end, kind, peer, wait
        (0, 0.0, 5.0, "mpi", 1, 4.0),
        (1, 0.0, 4.5, "mpi", 2, 4.0),
        (2, 0.0, 4.0, "kernel", None, 0.0),
        (3, 0.0, 3.0, "mpi", 0, 1.0),
    ]
    events = pd.DataFrame(rows, columns=["rank", "start_s", "end_s", "kind", "peer", "wait_s"])
    events["peer"] = events["peer"].astype("Int32")
    holder, hops = held_by(events, np.array([0, 3, 3, 1, 5]), np.array([1.0, 0.5, 2.0, 4.2, 1.0]))
    assert holder.tolist() == [2, 2, 3, 1, 5]
    assert hops.tolist() == [2, 3, 0, 0, 0]
    loop = events.copy()
    loop.loc[2, ["kind", "peer", "wait_s"]] = ["mpi", 0, 4.0]
    with pytest.raises(ValueError):
        held_by(loop, np.array([0]), np.array([1.0]))


def test_a_part_of_the_trace_is_the_same_rows_and_still_checked(runs, tmp_path):
    d, _, _, _ = runs
    full = read_trace(d / "full").events
    kernels = read_trace(d / "full", columns=["rank", "start_s", "end_s"], kinds=["kernel"]).events
    assert list(kernels.columns) == ["rank", "start_s", "end_s"]
    want = full[full["kind"] == "kernel"][["rank", "start_s", "end_s"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(kernels.reset_index(drop=True), want)
    mixed = tmp_path / "mixed"
    shutil.copytree(d / "full", mixed)
    shutil.copy(d / "part" / EVENTS, mixed / EVENTS)
    with pytest.raises(HplsimError, match="from another run"):
        read_trace(mixed, columns=["rank"], kinds=["kernel"])


def test_a_trace_too_large_for_this_machine_is_an_error_before_it_is_built(tmp_path, monkeypatch):
    """Writing a trace takes memory in proportion to its events (a 1,024-rank roll at
    N = 50,000 took 23 GB before E95): past what is available, one line, no trace folder."""
    import hplsim.emulate.trace as trace_module

    from helpers import assert_one_line_error, run_cli

    monkeypatch.setattr(trace_module, "mem_available", lambda: 10_000_000)
    r = run_cli("predict", *CONFIG, "--json", "--trace", "big", cwd=tmp_path)
    message = assert_one_line_error(r, r"the trace holds [\d,]+ events: writing it needs about [\d.]+ GB and "
                                       r"0\.0 GB are available; trace the first panels only \(--trace-panels K\)",
                                    code=None)
    events = int(message.split("holds ")[1].split(" ")[0].replace(",", ""))
    assert events * trace_module.WRITE_BYTES_PER_EVENT > 10_000_000
    assert not (tmp_path / "big").exists() and r.stdout == ""

"""predict's progress: the records rank 0 writes from inside the simulation, the reader, the
bar, and that the hook changes nothing in the prediction."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import termios

import pytest

from hplsim.emulate.progress import (
    PanelBar, ProgressPipe, RunBars, flops_done, panel_count, parse_records, remaining_flops,
)
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT
from helpers import HPLSIM

SMALL = ["predict", "--preset", "dahu", "-N", "3000", "-P", "2", "-Q", "2", "--seed", "3"]


# --------------------------------------------------------------------------- work model


def test_remaining_flops_is_the_sum_over_columns():
    # column s (s rows left) of an s x (s+1) trailing matrix: s-1 divisions, a rank-1 update of (s-1) x s
    for r in (1, 2, 3, 17, 200):
        assert remaining_flops(r) == pytest.approx(sum((s - 1) * (2 * s + 1) for s in range(1, r + 1)), abs=1e-6)
    n = 10**6
    assert remaining_flops(n) / (2 / 3 * n**3) == pytest.approx(1.0, rel=1e-5)  # HPL's count


def test_flops_done_is_monotone_and_front_loaded():
    n = 10000

    def work_done(n, ja):
        return flops_done(n, ja) / remaining_flops(n)

    fractions = [work_done(n, ja) for ja in range(0, n + 1, 500)]
    assert fractions[0] == 0.0 and fractions[-1] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(fractions, fractions[1:]))
    # a tenth of the columns is 1 - 0.9^3 of the flops
    assert work_done(n, n // 10) == pytest.approx(1 - 0.9**3, rel=1e-3)
    assert panel_count(10000, 128) == 79 and panel_count(10240, 1024) == 10


# ------------------------------------------------------------------------------ reader


def test_parse_records_from_a_stream_cut_anywhere():
    stream = b"0 0\n128 0.25\n256 0.5\nbad line here\n384 0.75\n512 1"  # last line incomplete
    for cut in range(1, len(stream)):
        chunks = [stream[:cut], stream[cut:]]
        assert list(parse_records(chunks)) == [(0, 0.0), (128, 0.25), (256, 0.5), (384, 0.75)]


def test_pipe_delivers_what_is_written():
    got = []
    with ProgressPipe(lambda ja, t: got.append((ja, t))) as pipe:
        os.write(pipe.fd, b"0 0\n1024 2.5\n")
        os.write(pipe.fd, b"20")
        os.write(pipe.fd, b"48 5\n")
    assert got == [(0, 0.0), (1024, 2.5), (2048, 5.0)]


# --------------------------------------------------------------------------------- bar


def test_bar_counts_panels_and_reports_gflops_so_far():
    out = io.StringIO()
    n, nb = 10000, 1000
    with PanelBar(n, nb, "run: ", file=out) as bar:
        for k in range(5):
            bar(k * nb, 2.0 * k)
        assert bar.bar.n == 4  # the panel starting at column 4000 is being set up: 4 done
        assert bar.bar.total == 10
        expected = flops_done(n, 4000) / 8.0 / 1e9
        assert f"{expected:.4g} Gflops so far" in bar.bar.postfix
        bar(3 * nb, 9.0)  # a late record never moves the bar back
        assert bar.bar.n == 4
        bar.finish()
        assert bar.bar.n == 10
    assert "10/10 panels" in out.getvalue()


# --------------------------------------------------------------------- real simulations


def test_records_come_from_the_simulation_and_change_nothing(tmp_path):
    config = HplConfig(**{**DEFAULT.config(4000).as_dict(), "p": 2, "q": 2, "nb": 100, "depth": 1})
    platform = load_platform(DEFAULT.platform, DEFAULT.ranks_per_host)
    model = ModelSource.from_path(DEFAULT.model, "builtin:dahu")
    records = []
    with_hook = predict(config, platform, model, seed=5, progress=lambda ja, t: records.append((ja, t)))
    without = predict(config, platform, model, seed=5)
    assert (with_hook.gflops, with_hook.time_s) == (without.gflops, without.time_s)  # bit for bit
    columns = [ja for ja, _ in records]
    # every panel start, in order (with DEPTH 1, HPL sets the next panel up once more at the start)
    assert sorted(set(columns)) == list(range(0, 4000, 100))
    assert columns == sorted(columns)
    times = [t for _, t in records]
    assert times == sorted(times) and 0 <= times[0] < times[-1] < with_hook.time_s


def _run_on_pty(args: list[str]) -> tuple[str, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen([*HPLSIM, *args], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = proc.stdout.read()
    assert proc.wait(timeout=300) == 0, err.decode(errors="replace")
    return out.decode(), err.decode(errors="replace")


def test_bar_on_a_terminal_quiet_in_json_and_pipes():
    out, err = _run_on_pty(SMALL)
    assert "24/24 panels" in err and "Gflops so far" in err  # N/NB = 3000/128: 24 panels
    assert "Gflops" in out  # the table itself goes to stdout
    out, err = _run_on_pty([*SMALL, "--json"])
    assert "panels" not in err
    piped = subprocess.run([*HPLSIM, *SMALL], capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and "panels" not in piped.stderr


def test_run_bars_one_bar_per_run_in_flight():
    out = io.StringIO()
    runs = {"a": (10000, 1000, "run a"), "b": (20000, 1000, "run b"), "c": (5000, 1000, "run c")}
    bars = RunBars(runs.__getitem__, file=out)
    bars("a", 0, 0.0)
    bars("b", 1000, 1.0)
    assert bars.positions == {"a": 1, "b": 2}  # under the overall bar (position 0)
    bars.done("a")
    bars("a", 2000, 2.0)  # a record arriving after its run ended is dropped
    assert set(bars.bars) == {"b"}
    bars("c", 0, 0.0)
    assert bars.positions == {"b": 2, "c": 1}  # the freed line is reused
    assert bars.bars["b"].bar.n == 1 and bars.bars["b"].bar.total == 20
    bars.close()
    assert not bars.bars


def test_sweep_shows_each_run_on_a_terminal(tmp_path):
    (tmp_path / "spec.yaml").write_text("hpl: {n: [3000], nb: 128, grids: [[2, 2]]}\nseeds: [1, 2]\n")
    out, err = _run_on_pty(["sweep", str(tmp_path / "spec.yaml"), "--db", str(tmp_path / "r.sqlite"), "--jobs", "2"])
    assert "2 runs in" in err and "2 ok" in err
    assert "WR11C2R4 seed" in err and "/24 panels" in err  # a run's own bar

"""The C calibration programs: cached build, data initialisation (checked on the bits of
the buffers they fill), output format, and refusal of bad input."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hplsim.calibrate import tools
from hplsim.calibrate.archive import BLAS_COLUMNS, MPI_COLUMNS
from hplsim.calibrate.hosts import mpirun_base
from hplsim.calibrate.tools import BLAS_TOOL, MPI_TOOL, build_calibration_tools

ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")


@pytest.fixture(scope="module")
def built() -> dict[str, Path]:
    return build_calibration_tools()


def test_build_is_cached_and_keyed_by_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPLSIM_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "calib"
    shutil.copytree(tools.sources_dir(), src)
    monkeypatch.setattr(tools, "sources_dir", lambda: src)
    first = build_calibration_tools()
    assert set(first) == {BLAS_TOOL, MPI_TOOL} and all(os.access(p, os.X_OK) for p in first.values())
    mtime = first[BLAS_TOOL].stat().st_mtime_ns
    assert build_calibration_tools() == first and first[BLAS_TOOL].stat().st_mtime_ns == mtime
    (src / "calib_blas.c").write_text((src / "calib_blas.c").read_text() + "\n/* edited */\n")
    second = build_calibration_tools()
    assert second[BLAS_TOOL] != first[BLAS_TOOL] and second[BLAS_TOOL].exists()
    forced = build_calibration_tools(force=True)
    assert forced == second and forced[BLAS_TOOL].exists()
    assert not list((tmp_path / "cache" / "builds").glob(".calib-*"))  # no temp dir left


def dump(tool: Path, tmp_path: Path, *args: str, count: int = 4096) -> np.ndarray:
    out = tmp_path / "dump.bin"
    subprocess.run([str(tool), "--dump", str(out), "--dump-count", str(count), *args], check=True, env=ENV)
    return np.fromfile(out, dtype=np.float64).reshape(3, count)  # A, B, C


def bit_frequencies(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint64).ravel()
    return np.array([((bits >> np.uint64(i)) & np.uint64(1)).mean() for i in range(64)])


MANTISSA = 52


def test_init_constant(built, tmp_path: Path) -> None:
    x = dump(built[BLAS_TOOL], tmp_path, "--init", "constant", "--constant", "3.5")
    assert (x == 3.5).all()


def test_init_sequential(built, tmp_path: Path) -> None:
    x = dump(built[BLAS_TOOL], tmp_path, "--init", "sequential")
    assert (x == np.arange(4096)).all()  # each buffer counts 0, 1, 2, ... in memory order


def test_init_random_flips_every_mantissa_bit(built, tmp_path: Path) -> None:
    x = dump(built[BLAS_TOOL], tmp_path, "--init", "random", "--seed", "5", count=20000)
    f = bit_frequencies(x)
    assert np.all(np.abs(f[:MANTISSA] - 0.5) < 0.02)  # every mantissa bit is a coin flip
    assert abs(f[63] - 0.5) < 0.02  # sign too
    assert np.all((1 <= np.abs(x)) & (np.abs(x) < 2))  # fixed exponent: no denormal, no overflow
    assert len(np.unique(x)) > 0.99 * x.size
    # seeded: same seed same data, other seed other data, ranks differ
    y = dump(built[BLAS_TOOL], tmp_path, "--init", "random", "--seed", "5", count=20000)
    z = dump(built[BLAS_TOOL], tmp_path, "--init", "random", "--seed", "6", count=20000)
    r = dump(built[BLAS_TOOL], tmp_path, "--init", "random", "--seed", "5", "--rank", "1", count=20000)
    assert (x == y).all() and not (x == z).any() and not (x == r).all()


@pytest.mark.parametrize("k", [1, 12, 40, 52])
def test_init_masked_zeroes_exactly_k_low_bits(built, tmp_path: Path, k: int) -> None:
    x = dump(built[BLAS_TOOL], tmp_path, "--init", "masked", "--mask-bits", str(k), "--seed", "2", count=20000)
    f = bit_frequencies(x)
    assert np.all(f[:k] == 0)  # the masked bits are all zero
    assert np.all(np.abs(f[k:MANTISSA] - 0.5) < 0.02)  # the others still random
    full = dump(built[BLAS_TOOL], tmp_path, "--init", "random", "--seed", "2", count=20000)
    mask = np.uint64(~((1 << k) - 1) & 0xFFFFFFFFFFFFFFFF)
    assert (x.view(np.uint64) == (full.view(np.uint64) & mask)).all()  # same draw, masked


def run_blas(tool: Path, tmp_path: Path, text: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    exp = tmp_path / "exp.csv"
    exp.write_text(text)
    return subprocess.run([str(tool), "--pad-bytes", "0", *args, str(exp)], capture_output=True, text=True,
                          env=env or ENV, timeout=120)


def test_blas_tool_output(built, tmp_path: Path) -> None:
    text = "function,m,n,k,side,lda,ldb,ldc,repetition\n" \
           "dgemm,64,32,16,,100,,,0\ndtrsm,50,40,,L,,,,1\ndtrsm,50,40,,R,,60,,1\ndgemm,1,1,1,,,,,2\n"
    res = run_blas(built[BLAS_TOOL], tmp_path, text, "--core", "1", "--rank", "3")
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(io.StringIO(res.stdout), dtype={"side": str})
    assert list(df.columns) == list(BLAS_COLUMNS)
    assert df.function.tolist() == ["dgemm", "dtrsm", "dtrsm", "dgemm"]
    assert df.lda.tolist() == [100, 50, 40, 1] and df.ldb.tolist() == [16, 50, 60, 1]
    assert df.k.isna().tolist() == [False, True, True, False] and df.ldc.isna().tolist() == [False, True, True, False]
    assert df.side.fillna("").tolist() == ["", "L", "R", ""]
    assert (df.core == 1).all() and (df["rank"] == 3).all() and df.repetition.tolist() == [0, 1, 1, 2]
    assert (df.duration > 0).all() and df.start.is_monotonic_increasing
    assert (df.cpu == 0).all()  # socket of core 1 on this machine
    # the rank comes from the launcher when not given
    res = run_blas(built[BLAS_TOOL], tmp_path, "m,n,k\n2,2,2\n", env=dict(ENV, OMPI_COMM_WORLD_RANK="7"))
    assert pd.read_csv(io.StringIO(res.stdout))["rank"].tolist() == [7]


@pytest.mark.parametrize("text, message", [
    ("function,m,n,k\nsgemm,1,1,1\n", "unknown function sgemm on line 2"),
    ("m,n,k\n0,1,1\n", "line 2: m and n must be integers >= 1"),
    ("m,n,k\n1,1,\n", "line 2: dgemm needs k >= 1"),
    ("m,n,k,lda\n10,1,1,5\n", "leading dimension below the minimum"),
    ("function,m,n,side\ndtrsm,1,1,Q\n", "dtrsm needs side L or R"),
    ("a,b\n1,2\n", "header needs columns m and n"),
])
def test_blas_tool_refuses_bad_rows(built, tmp_path: Path, text: str, message: str) -> None:
    res = run_blas(built[BLAS_TOOL], tmp_path, text)
    assert res.returncode == 2 and message in res.stderr and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1


def test_blas_tool_missing_file(built, tmp_path: Path) -> None:
    res = subprocess.run([str(built[BLAS_TOOL]), str(tmp_path / "nope.csv")], capture_output=True, text=True)
    assert res.returncode == 2 and "cannot read experiment file" in res.stderr


def mpirun(tool: Path, exp: Path) -> subprocess.CompletedProcess:
    extra = ["--oversubscribe"] if len(os.sched_getaffinity(0)) < 2 else []
    return subprocess.run([*mpirun_base(), *extra, "-np", "2", str(tool), str(exp)], capture_output=True,
                          text=True, timeout=120)


def test_mpi_tool_every_operation(built, tmp_path: Path) -> None:
    exp = tmp_path / "m.csv"
    ops = ["send", "recv", "isend", "pingpong", "iprobe", "test", "wtime"]
    exp.write_text("operation,size,repetition\n" + "".join(f"{op},{s},{r}\n" for r in range(2)
                                                         for op in ops for s in (1, 100000)))
    res = mpirun(built[MPI_TOOL], exp)
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(io.StringIO(res.stdout))
    assert list(df.columns) == list(MPI_COLUMNS) and len(df) == 28
    assert df.operation.tolist() == [op for r in range(2) for op in ops for _ in (1, 100000)]
    assert (df.duration > 0).all() and (df.duration < 1).all()
    # who times what: the sender for send/isend/pingpong/wtime, the receiver otherwise
    timer = df.groupby("operation")["rank"].unique().map(list).to_dict()
    assert timer == {"send": [0], "isend": [0], "pingpong": [0], "wtime": [0],
                     "recv": [1], "iprobe": [1], "test": [1]}
    big = df[(df.operation == "pingpong") & (df["size"] == 100000)].duration
    small = df[(df.operation == "pingpong") & (df["size"] == 1)].duration
    assert big.min() > small.min()


def test_mpi_tool_refuses_unknown_operation(built, tmp_path: Path) -> None:
    exp = tmp_path / "m.csv"
    exp.write_text("operation,size\nsend,1\nallreduce,8\n")
    res = mpirun(built[MPI_TOOL], exp)
    assert res.returncode != 0 and "unknown operation allreduce on line 3" in res.stderr
    exp.write_text("operation,size\nsend,0\n")
    res = mpirun(built[MPI_TOOL], exp)
    assert res.returncode != 0 and "size must be an integer" in res.stderr


def test_blas_tool_warns_about_subnormal_operands(built, tmp_path: Path) -> None:
    """Subnormal data run through microcode assists: a calibration on them is flagged."""
    res = run_blas(built[BLAS_TOOL], tmp_path, "m,n,k\n4,4,4\n", "--init", "constant", "--constant", "1e-310")
    assert res.returncode == 0 and "warning: rank 0:" in res.stderr and "subnormal" in res.stderr
    res = run_blas(built[BLAS_TOOL], tmp_path, "function,m,n,side\n" + "dtrsm,256,64,L\n" * 200, "--seed", "1")
    assert res.returncode == 0 and "warning" not in res.stderr  # repeated solves stay normal

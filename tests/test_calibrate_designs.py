"""Design generators: the statistical properties they promise, seeds, and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hplsim.calibrate.designs import (MPI_OPERATIONS, MPI_SMALL_OPERATIONS, MPI_SMALL_SIZES, MPI_LATE_SIZES, blas_design,
                                      blas_design_from_file, blas_operand_bytes, mpi_design,
                                      mpi_design_from_file, sequence)
from hplsim.errors import HplsimError


def products(design) -> np.ndarray:
    p = design.points[~design.points.anchor]
    return (p.m.astype(float) * p.n * p.k).to_numpy()


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_uniform_product_is_uniform(seed: int) -> None:
    d = blas_design("dgemm", "uniform-product", rows=182, seed=seed, max_product=2**31, max_side=4096)
    # one product per target (the 6 permutations share it): KS against U(0, max)
    unique = np.unique(products(d))
    assert len(unique) >= 25
    assert stats.kstest(unique / 2**31, "uniform").pvalue > 0.05
    # and all calls together (each product 6 times) are still uniform
    assert stats.kstest(products(d) / 2**31, "uniform").pvalue > 0.05


def test_independent_sizes_are_not_uniform_in_the_product() -> None:
    """Why the uniform-product design exists: independent sides pile products near 0."""
    d = blas_design("dgemm", "independent", rows=400, seed=1, max_product=2**33, max_side=2048)
    assert stats.kstest(products(d) / 2**33, "uniform").pvalue < 1e-3
    p = d.points
    assert (p.m * p.n * p.k <= 2**33).all() and p.m.max() <= 2048


def test_uniform_product_shape() -> None:
    d = blas_design("dgemm", rows=60, seed=1, max_product=2**31, max_side=4096)
    p = d.points
    assert len(p) == 60 and p.row.tolist() == list(range(60))
    anchors = p[p.anchor]
    assert anchors[["m", "n", "k"]].values.tolist() == [[1, 1, 1], [2048, 2048, 2048]]
    free = p[~p.anchor]
    assert free[["m", "n", "k"]].max().max() <= 4096 and free[["m", "n", "k"]].min().min() >= 1
    # all 6 permutations of each factorisation are kept (the last target may be cut)
    for target, g in list(free.groupby("target"))[:-1]:
        triples = {tuple(r) for r in g[["m", "n", "k"]].values.tolist()}
        first = next(iter(triples))
        assert len(g) == 6 and all(sorted(t) == sorted(first) for t in triples)
    # the product stays close to its target
    rel = (free.m * free.n * free.k - free.target).abs() / 2**31
    assert rel.max() < 0.01


def test_fixed_k_and_dtrsm() -> None:
    d = blas_design("dgemm", "fixed-k", rows=42, seed=5, k=128, anchors=[])
    assert (d.points.k == 128).all() and len(d.points) == 42
    t = blas_design("dtrsm", rows=31, seed=5, max_product=2**30)
    pts = t.points
    assert len(pts) == 31 and set(pts.side) == {"L", "R"} and pts.k.isna().all()
    free = pts[~pts.anchor]
    order = np.where(free.side == "L", free.m, free.n).astype(float)
    other = np.where(free.side == "L", free.n, free.m).astype(float)
    assert stats.kstest(np.unique(order**2 * other) / 2**30, "uniform").pvalue > 0.01


def test_same_seed_same_design_and_sequence() -> None:
    a = blas_design(rows=60, seed=7)
    b = blas_design(rows=60, seed=7)
    c = blas_design(rows=60, seed=8)
    pd.testing.assert_frame_equal(a.points, b.points)
    assert not a.points.equals(c.points)
    pd.testing.assert_frame_equal(sequence(a, 3, 7), sequence(b, 3, 7))
    m1, m2 = mpi_design(40, seed=7), mpi_design(40, seed=7)
    pd.testing.assert_frame_equal(m1.points, m2.points)
    # adding repetitions keeps the order of the first ones
    pd.testing.assert_frame_equal(sequence(a, 1, 7), sequence(a, 2, 7).iloc[:60])


def test_sequence_is_shuffled_per_repetition() -> None:
    d = blas_design(rows=60, seed=1)
    plan = sequence(d, repetitions=3, seed=1)
    assert len(plan) == 180 and plan.order.tolist() == list(range(180))
    reps = [g.row.tolist() for _, g in plan.groupby("repetition")]
    for r in reps:
        assert sorted(r) == list(range(60))  # every point exactly once per repetition
        assert r != sorted(r)  # shuffled, not sorted
    assert reps[0] != reps[1] != reps[2]  # each repetition has its own order
    assert sequence(d, 2, 1, shuffle=False).row.tolist() == list(range(60)) * 2


def test_mpi_sizes_cover_every_decade() -> None:
    d = mpi_design(rows=70, seed=3, operations=("send", "recv", "isend", "pingpong", "iprobe", "test", "wtime"),
                   min_size=1, max_size=10**9)
    p = d.points
    for op in ("send", "recv", "isend", "pingpong"):
        sizes = p[p.operation == op]["size"]
        decades = set(np.floor(np.log10(sizes)).astype(int))
        assert decades == set(range(9)), (op, sorted(decades))  # 1 B … 1 GB
        assert sizes.min() >= 1 and sizes.max() <= 10**9
        # log-uniform: KS of the exponents against U(0, 9)
        assert stats.kstest(np.log10(sizes) / 9, "uniform").pvalue > 0.05
    for op in MPI_SMALL_OPERATIONS:
        assert set(p[p.operation == op]["size"]) <= set(MPI_SMALL_SIZES)
    assert len(p) == 70 and set(p.operation) == set(MPI_OPERATIONS) - {"iprobe-late"}


def test_mpi_default_design_measures_late_probes_on_eager_and_rendezvous_sizes() -> None:
    p = mpi_design(rows=80, seed=1).points
    late = p[p.operation == "iprobe-late"]["size"]
    assert len(late) == 10 and set(late) <= set(MPI_LATE_SIZES)
    assert late.min() <= 4096 < late.max()  # both protocols of a typical MPI


def test_mpi_exponential_draws_pass_ks_over_seeds() -> None:
    exps = np.concatenate([np.log10(mpi_design(40, seed=s, operations=("pingpong",)).points["size"])
                           for s in range(20)])
    assert stats.kstest(exps / 9, "uniform").pvalue > 0.01


def test_operand_bytes() -> None:
    d = blas_design("dgemm", rows=2, seed=0, anchors=[(100, 200, 300), (10, 20, 30)])
    assert blas_operand_bytes(d.points) == 8 * (100 * 300 + 300 * 200 + 100 * 200)
    t = blas_design("dtrsm", rows=1, seed=0, anchors=[(100, 50, "R")])
    assert blas_operand_bytes(t.points) == 8 * (50 * 50 + 100 * 50)


@pytest.mark.parametrize("kwargs, message", [
    (dict(rows=0), "--rows must be >= 1"),
    (dict(max_side=0), "size limits must be >= 1"),
    (dict(max_product=1e13, max_side=10), "above max side"),
    (dict(function="dgemv"), "unknown function"),
    (dict(generator="sobol"), "unknown design"),
    (dict(generator="fixed-k"), "needs --k"),
])
def test_blas_design_bad_input(kwargs, message) -> None:
    with pytest.raises(HplsimError, match=message):
        blas_design(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(operations=("send", "allreduce")), "unknown MPI operation 'allreduce'"),
    (dict(min_size=0), "1 <= min <= max"),
    (dict(max_size=2**32), "above 2"),
    (dict(rows=0), "--rows must be >= 1"),
])
def test_mpi_design_bad_input(kwargs, message) -> None:
    with pytest.raises(HplsimError, match=message):
        mpi_design(**kwargs)


@pytest.mark.parametrize("text, message", [
    ("m,n,k\n1,2,0\n", r"e\.csv:2: k = 0 must be an integer >= 1"),
    ("m,n,k\n1,-2,3\n", "n = -2 must be"),
    ("m,n,k\n1,x,3\n", "not a number"),
    ("m,n,k\n1,2,3\n4,5,\n", r"e\.csv:3: k is missing"),
    ("m,n,k,lda\n10,2,3,5\n", "lda = 5 is below the minimum 10"),
    ("m,n,k\n3000000000,1,1\n", "does not fit a BLAS int"),
    ("m,n\n", "has no rows"),
    ("", "not a readable CSV"),
    ("function,m,n,side\ndtrsm,1,2,X\n", "side L or R"),
    ("function,m,n,k\nsgemm,1,2,3\n", "unknown function 'sgemm'"),
    ("a,b\n1,2\n", "needs columns m and n"),
])
def test_experiment_file_errors(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "e.csv"
    f.write_text(text)
    with pytest.raises(HplsimError, match=message):
        blas_design_from_file(f)


def test_experiment_file_reads(tmp_path: Path) -> None:
    f = tmp_path / "e.csv"
    f.write_text("m,n,k,lda\n10,20,30,\n5,6,7,64\n")
    d = blas_design_from_file(f, "dgemm")
    assert d.points[["m", "n", "k"]].values.tolist() == [[10, 20, 30], [5, 6, 7]]
    assert pd.isna(d.points.lda[0]) and d.points.lda[1] == 64
    with pytest.raises(HplsimError, match="no such file"):
        blas_design_from_file(tmp_path / "missing.csv")
    g = tmp_path / "m.csv"
    g.write_text("operation,size\nsend,10\npingpong,0\n")
    with pytest.raises(HplsimError, match="m.csv:3: size = 0"):
        mpi_design_from_file(g)
    g.write_text("operation,size\nbcast,10\n")
    with pytest.raises(HplsimError, match="unknown MPI operation 'bcast'"):
        mpi_design_from_file(g)
    g.write_text("operation,size\nsend,10\nwtime,1\n")
    assert mpi_design_from_file(g).points.operation.tolist() == ["send", "wtime"]
    assert math.isclose(len(sequence(mpi_design_from_file(g), 2, 0)), 4)

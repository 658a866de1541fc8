"""Experiment designs: which kernel sizes or message sizes to measure, and in which order.

Every generator takes a seed and returns a `Design`: the design points plus the generator's
name and parameters, which go into the archive's metadata so that the same call rebuilds
the same design. `sequence(design, repetitions, seed)` then plans the run: each
repetition is its own shuffle of all the points, because the order of calls was measured
to bias kernel durations (caches, frequency) when sizes come sorted or grouped.

Why these generators (docs/calibrate.md has the measurements behind them):
- uniform product: dgemm's duration is mostly proportional to M·N·K, so a design uniform
  in the product spreads the points evenly along the axis that matters, and random
  factorisations (all 6 permutations kept) expose the shape effects a pure cube sweep hides;
- independent sizes: each side uniform, for comparison (products pile up near 0);
- fixed K: HPL's calls are mostly K = NB, the block size;
- MPI: protocol breakpoints are spread exponentially in the message size, so sizes are
  10^U(min, max).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.hpl.kernels import calibrated

#: what the calibration benchmark measures (csrc/calib/calib_blas.c; the table of kernels says which)
BLAS_FUNCTIONS = calibrated()
BLAS_GENERATORS = ("uniform-product", "independent", "fixed-k")
MPI_TRANSFER_OPERATIONS = ("send", "recv", "isend", "pingpong")
MPI_SMALL_OPERATIONS = ("iprobe", "test", "wtime")
MPI_OPERATIONS = MPI_TRANSFER_OPERATIONS + MPI_SMALL_OPERATIONS + ("iprobe-late",)
# iprobe/test/wtime cost the same for any size: a few sizes are enough to check that.
MPI_SMALL_SIZES = (1, 8, 64, 512, 4096)
# iprobe-late: eager and rendez-vous messages (HPL's panels are the latter)
MPI_LATE_SIZES = (8, 4096, 65536, 1048576)

DEFAULT_MAX_PRODUCT = 2**31  # ≈ 1290³: 60 rows take a few seconds on one core
DEFAULT_MAX_SIDE = 4096
DEFAULT_DGEMM_ANCHORS: tuple[tuple[int, int, int], ...] = ((1, 1, 1), (2048, 2048, 2048))
DEFAULT_DTRSM_ANCHORS: tuple[tuple[int, int, str], ...] = ((1, 1, "L"), (2048, 2048, "L"), (2048, 2048, "R"))
BLAS_INT_MAX = 2**31 - 1
MPI_SIZE_MAX = 2**31 - 1  # MPI counts are C ints

BLAS_POINT_COLUMNS = ("row", "function", "m", "n", "k", "side", "lda", "ldb", "ldc", "anchor", "target")
MPI_POINT_COLUMNS = ("row", "operation", "size")


@dataclass(frozen=True)
class Design:
    """Design points (one row each, column `row` numbers them) and how they were made."""

    kind: str  # "blas" | "mpi"
    generator: str
    seed: int | None
    parameters: dict[str, Any]
    points: pd.DataFrame = field(repr=False)

    def metadata(self, repetitions: int, shuffle: bool) -> dict[str, Any]:
        return {"generator": self.generator, "seed": self.seed, "rows": len(self.points),
                "repetitions": repetitions, "shuffled": shuffle, "parameters": self.parameters}


def _rng(seed: int, stream: int) -> np.random.Generator:
    # distinct streams for the points and for the order: changing the repetitions never
    # changes the points drawn for a seed
    return np.random.default_rng([int(seed), stream])


def _jittered(n: int, low: float, high: float, rng: np.random.Generator) -> np.ndarray:
    """n values, one uniform draw in each of n equal strata of [low, high): uniform
    marginally, and never leaves a stretch of the range empty as plain draws can."""
    return low + (np.arange(n) + rng.uniform(size=n)) * (high - low) / n


def _per_decade(n: int, low: float, high: float, rng: np.random.Generator) -> np.ndarray:
    """n exponents uniform on [low, high], stratified by decade first: each unit interval
    (the last may be shorter) gets its share of the rows (largest remainder, ties drawn at
    random), then jittered strata inside it. With as many rows as decades every decade is
    measured, which plain or evenly jittered draws do not guarantee."""
    if high <= low:
        return np.full(n, low)
    edges = np.append(np.arange(low, high, 1.0), high)
    lengths = np.diff(edges)
    share = n * lengths / lengths.sum()
    counts = np.floor(share).astype(int)
    rest = n - counts.sum()
    if rest:
        # largest remainder first; the random key only breaks ties
        key = np.lexsort((rng.uniform(size=len(share)), -(share - counts)))
        counts[key[:rest]] += 1
    parts = [_jittered(c, a, b, rng) for c, a, b in zip(counts, edges[:-1], edges[1:]) if c]
    return np.concatenate(parts) if parts else np.empty(0)


def _factorise(p: float, parts: int, max_side: int, rng: np.random.Generator) -> tuple[int, ...]:
    """Random integer sides, each in [1, max_side], whose product is close to p.

    The split of log p among the sides is uniform on the simplex (so every shape, from
    cube to needle, is drawn); splits that put a side above max_side are rejected.
    """
    logp = math.log(max(p, 1.0))
    for _ in range(10_000):
        w = rng.dirichlet(np.ones(parts))
        sides = [max(1, int(round(math.exp(wi * logp)))) for wi in w[:-1]]
        last = max(1, int(round(p / math.prod(sides))))
        sides.append(last)
        if max(sides) <= max_side:
            return tuple(sides)
    # p close to max_side^parts: almost every split is rejected; take the balanced one
    side = min(max_side, max(1, int(round(p ** (1.0 / parts)))))
    return (side,) * parts


def _check_limits(max_product: float, max_side: int, parts: int) -> None:
    if max_side < 1 or max_product < 1:
        raise HplsimError("size limits must be >= 1")
    if max_side > BLAS_INT_MAX:
        raise HplsimError(f"max side {max_side} does not fit a BLAS int")
    if max_product > float(max_side) ** parts:
        raise HplsimError(f"max product {max_product:g} is above max side^{parts} = {float(max_side) ** parts:g}")


def _blas_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(BLAS_POINT_COLUMNS))
    frame["row"] = np.arange(len(frame))
    for col in ("m", "n"):
        frame[col] = frame[col].astype("int64")
    for col in ("k", "lda", "ldb", "ldc", "target"):
        frame[col] = frame[col].astype("Int64")
    frame["side"] = frame["side"].fillna("").astype(str)
    frame["anchor"] = frame["anchor"].astype(bool)
    return frame


def _anchor_rows(function: str, anchors: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    out = []
    for a in anchors:
        if function == "dgemm":
            m, n, k = (int(x) for x in a)
            out.append(dict(function="dgemm", m=m, n=n, k=k, side="", anchor=True))
        else:
            m, n, side = int(a[0]), int(a[1]), str(a[2]).upper()
            out.append(dict(function="dtrsm", m=m, n=n, k=None, side=side, anchor=True))
    return out


def blas_design(function: str = "dgemm", generator: str = "uniform-product", rows: int = 60,
                seed: int = 0, max_product: float = DEFAULT_MAX_PRODUCT,
                max_side: int = DEFAULT_MAX_SIDE, k: int | None = None,
                anchors: Sequence[Sequence[Any]] | None = None) -> Design:
    """A dgemm or dtrsm design of exactly `rows` points (anchors included).

    uniform-product: ceil((rows - anchors)/6) target products jittered evenly over
    (0, max_product], each factorised at random into (M, N, K) with sides <= max_side, all
    6 permutations kept (the last product's are cut to fit `rows`). For dtrsm the product
    is the flop count M·N·order, factorised into (order, other) with both sides L and R.
    independent: M, N, K uniform in [1, max_side], rejected when M·N·K > max_product.
    fixed-k: K = k (HPL's NB) for every row, M·N·K uniform as above, both (M, N) orders.
    """
    if function not in BLAS_FUNCTIONS:
        raise HplsimError(f"unknown function {function!r} (known: {', '.join(BLAS_FUNCTIONS)})")
    if generator not in BLAS_GENERATORS:
        raise HplsimError(f"unknown design {generator!r} (known: {', '.join(BLAS_GENERATORS)})")
    if rows < 1:
        raise HplsimError(f"--rows must be >= 1, got {rows}")
    if anchors is None:
        anchors = DEFAULT_DGEMM_ANCHORS if function == "dgemm" else DEFAULT_DTRSM_ANCHORS
    anchor_rows = _anchor_rows(function, anchors)[:rows]
    free = rows - len(anchor_rows)
    rng = _rng(seed, 0)
    points: list[dict[str, Any]] = []
    params: dict[str, Any] = {"function": function, "max_product": max_product, "max_side": max_side,
                              "anchors": [list(a) for a in anchors][: len(anchor_rows)]}

    if generator == "fixed-k":
        if k is None or k < 1:
            raise HplsimError("the fixed-k design needs --k >= 1 (HPL's block size NB)")
        if function != "dgemm":
            raise HplsimError("the fixed-k design is for dgemm")
        _check_limits(max_product / k, max_side, 2)
        params["k"] = k
        n_products = math.ceil(free / 2)
        for p in _jittered(n_products, 0.0, max_product, rng):
            m, n = _factorise(max(p / k, 1.0), 2, max_side, rng)
            for a, b in ((m, n), (n, m)):
                points.append(dict(function="dgemm", m=a, n=b, k=k, side="", anchor=False, target=int(round(p))))
    elif generator == "independent":
        _check_limits(max_product, max_side, 3)
        while len(points) < free:
            m, n, kk = (int(x) for x in rng.integers(1, max_side + 1, size=3))
            if m * n * kk > max_product:
                continue
            if function == "dgemm":
                points.append(dict(function="dgemm", m=m, n=n, k=kk, side="", anchor=False))
            else:
                points.append(dict(function="dtrsm", m=m, n=n, side=str(rng.choice(["L", "R"])), anchor=False))
    elif function == "dgemm":
        _check_limits(max_product, max_side, 3)
        n_products = math.ceil(free / 6)
        for p in _jittered(n_products, 0.0, max_product, rng):
            sides = _factorise(max(p, 1.0), 3, max_side, rng)
            for m, n, kk in itertools.permutations(sides):
                points.append(dict(function="dgemm", m=m, n=n, k=kk, side="", anchor=False, target=int(round(p))))
    else:  # dtrsm, uniform product of M·N·order
        _check_limits(max_product, max_side, 3)
        n_products = math.ceil(free / 2)
        for p in _jittered(n_products, 0.0, max_product, rng):
            # order² · other = p, with the order taking a uniform share of log p
            logp = math.log(max(p, 1.0))
            for _ in range(10_000):
                w = rng.uniform()
                order = max(1, int(round(math.exp(w * logp / 2))))
                other = max(1, int(round(p / order**2)))
                if order <= max_side and other <= max_side:
                    break
            points.append(dict(function="dtrsm", m=order, n=other, side="L", anchor=False, target=int(round(p))))
            points.append(dict(function="dtrsm", m=other, n=order, side="R", anchor=False, target=int(round(p))))
    frame = _blas_frame(anchor_rows + points[:free])
    return Design("blas", generator, seed, params, frame)


def blas_design_from_file(path: str | Path, function: str | None = None) -> Design:
    """A design read from an experiment CSV (columns m, n and k or side; optional function,
    lda, ldb, ldc). Every problem is reported with its line before anything runs."""
    frame = _read_experiment(path)
    cols = set(frame.columns)
    if not {"m", "n"} <= cols:
        raise HplsimError(f"{path}: experiment file needs columns m and n (has {', '.join(frame.columns)})")
    if "function" not in cols:
        frame["function"] = function or ("dtrsm" if "side" in cols and "k" not in cols else "dgemm")
    rows = []
    for i, r in enumerate(frame.to_dict("records")):
        line = i + 2
        fn = str(r.get("function") or "").strip() or (function or "dgemm")
        if fn not in BLAS_FUNCTIONS:
            raise HplsimError(f"{path}:{line}: unknown function {fn!r} (known: {', '.join(BLAS_FUNCTIONS)})")
        vals = {c: _int_cell(r.get(c), path, line, c, required=c in ("m", "n") or (c == "k" and fn == "dgemm"))
                for c in ("m", "n", "k", "lda", "ldb", "ldc")}
        side = str(r.get("side") or "").strip().upper()
        if fn == "dtrsm":
            if side not in ("L", "R"):
                raise HplsimError(f"{path}:{line}: dtrsm needs side L or R")
            order = vals["m"] if side == "L" else vals["n"]
            if vals["lda"] is not None and vals["lda"] < order or vals["ldb"] is not None and vals["ldb"] < vals["m"]:
                raise HplsimError(f"{path}:{line}: leading dimension below the minimum")
            vals["k"] = vals["ldc"] = None
        else:
            side = ""
            mins = {"lda": vals["m"], "ldb": vals["k"], "ldc": vals["m"]}
            for c, least in mins.items():
                if vals[c] is not None and vals[c] < least:
                    raise HplsimError(f"{path}:{line}: {c} = {vals[c]} is below the minimum {least}")
        rows.append(dict(function=fn, side=side, anchor=False, **vals))
    if function is not None and any(r["function"] != function for r in rows):
        raise HplsimError(f"{path}: rows other than {function} in the experiment file")
    design_frame = _blas_frame(rows)
    return Design("blas", "file", None, {"file": str(path)}, design_frame)


def _read_experiment(path: str | Path) -> pd.DataFrame:
    p = Path(path)
    try:
        frame = pd.read_csv(p, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise HplsimError(f"experiment file {p}: no such file") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise HplsimError(f"experiment file {p} is not a readable CSV: {' '.join(str(exc).split())}") from None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    if frame.empty:
        raise HplsimError(f"experiment file {p} has no rows")
    return frame


def _int_cell(value: Any, path: str | Path, line: int, col: str, required: bool) -> int | None:
    text = "" if value is None else str(value).strip()
    if not text:
        if required:
            raise HplsimError(f"{path}:{line}: {col} is missing")
        return None
    try:
        number = float(text)
    except ValueError:
        raise HplsimError(f"{path}:{line}: {col} = {text!r} is not a number") from None
    if number != int(number) or number < 1:
        raise HplsimError(f"{path}:{line}: {col} = {text} must be an integer >= 1")
    if number > BLAS_INT_MAX:
        raise HplsimError(f"{path}:{line}: {col} = {text} does not fit a BLAS int")
    return int(number)


def mpi_design(rows: int = 40, seed: int = 0, operations: Sequence[str] = MPI_OPERATIONS,
               min_size: int = 1, max_size: int = 10**9) -> Design:
    """`rows` (operation, size) points shared evenly among `operations`.

    Transfer operations get sizes 10^U(log10 min, log10 max), stratified by decade so that
    as many rows as decades cover every decade; iprobe/test/wtime draw from `MPI_SMALL_SIZES`.
    """
    unknown = [op for op in operations if op not in MPI_OPERATIONS]
    if unknown:
        raise HplsimError(f"unknown MPI operation {unknown[0]!r} (known: {', '.join(MPI_OPERATIONS)})")
    if not operations:
        raise HplsimError("no MPI operation selected")
    if rows < 1:
        raise HplsimError(f"--rows must be >= 1, got {rows}")
    if min_size < 1 or max_size < min_size:
        raise HplsimError(f"message sizes must satisfy 1 <= min <= max, got {min_size} .. {max_size}")
    if max_size > MPI_SIZE_MAX:
        raise HplsimError(f"max message size {max_size} is above 2^31-1 bytes (MPI counts are ints)")
    rng = _rng(seed, 0)
    ops = list(dict.fromkeys(operations))
    counts = [rows // len(ops) + (1 if i < rows % len(ops) else 0) for i in range(len(ops))]
    points = []
    for op, count in zip(ops, counts):
        if op in MPI_SMALL_OPERATIONS:
            sizes = rng.choice(MPI_SMALL_SIZES, size=count)
        elif op == "iprobe-late":
            sizes = rng.choice(MPI_LATE_SIZES, size=count)
        else:
            exps = _per_decade(count, math.log10(min_size), math.log10(max_size), rng)
            sizes = np.clip(np.floor(10.0**exps), min_size, max_size).astype(np.int64)
        points += [dict(operation=op, size=int(s)) for s in sizes]
    frame = pd.DataFrame(points, columns=["operation", "size"])
    frame.insert(0, "row", np.arange(len(frame)))
    params = {"operations": ops, "min_size": min_size, "max_size": max_size,
              "small_sizes": list(MPI_SMALL_SIZES), "late_sizes": list(MPI_LATE_SIZES)}
    return Design("mpi", "mpi-exponential", seed, params, frame)


def mpi_design_from_file(path: str | Path) -> Design:
    frame = _read_experiment(path)
    if not {"operation", "size"} <= set(frame.columns):
        raise HplsimError(f"{path}: experiment file needs columns operation and size")
    points = []
    for i, r in enumerate(frame.to_dict("records")):
        op = str(r["operation"]).strip()
        if op not in MPI_OPERATIONS:
            raise HplsimError(f"{path}:{i + 2}: unknown MPI operation {op!r} (known: {', '.join(MPI_OPERATIONS)})")
        size = _int_cell(r["size"], path, i + 2, "size", required=True)
        assert size is not None
        if size > MPI_SIZE_MAX:
            raise HplsimError(f"{path}:{i + 2}: size {size} is above 2^31-1 bytes")
        points.append(dict(row=i, operation=op, size=size))
    return Design("mpi", "mpi-file", None, {"file": str(path)}, pd.DataFrame(points))


def sequence(design: Design, repetitions: int = 1, seed: int | None = 0, shuffle: bool = True) -> pd.DataFrame:
    """The run plan: every point once per repetition, each repetition shuffled on its own
    (unless `shuffle` is false). Columns `order`, `repetition`, then the point's columns."""
    if repetitions < 1:
        raise HplsimError(f"--repetitions must be >= 1, got {repetitions}")
    rng = _rng(0 if seed is None else seed, 1)
    parts = []
    for rep in range(repetitions):
        idx = rng.permutation(len(design.points)) if shuffle else np.arange(len(design.points))
        part = design.points.iloc[idx].copy()
        part.insert(0, "repetition", rep)
        parts.append(part)
    plan = pd.concat(parts, ignore_index=True)
    plan.insert(0, "order", np.arange(len(plan)))
    return plan


def blas_operand_bytes(points: pd.DataFrame) -> int:
    """Bytes of the largest A, B and C any point needs (column-major, ld × columns), i.e.
    what one measuring process allocates besides its offset slack."""
    m = points["m"].astype("int64").to_numpy()
    n = points["n"].astype("int64").to_numpy()
    is_trsm = (points["function"] == "dtrsm").to_numpy()
    side_left = (points["side"] == "L").to_numpy()
    k = points["k"].astype("Float64").fillna(1).astype("int64").to_numpy()
    order = np.where(side_left, m, n)

    def ld(col: str, least: np.ndarray) -> np.ndarray:
        v = points[col].astype("Float64").fillna(0).astype("int64").to_numpy()
        return np.maximum(v, least)

    a = np.where(is_trsm, ld("lda", order) * order, ld("lda", m) * k)
    b = np.where(is_trsm, ld("ldb", m) * n, ld("ldb", k) * n)
    c = np.where(is_trsm, 0, ld("ldc", m) * n)
    return int(8 * (a.max() + b.max() + c.max()))

"""The kernel tracer: a copy of the real HPL in which every kernel the emulation models is
timed around the real call (csrc/hpl-trace/hplsim_trace.c, linked with ``-Wl,--wrap``).

The traced binary is the real one (same objects, same flags) plus the wrappers, so a
traced run executes exactly the calls a plain run does, at the sizes HPL chooses, on the
data and in the cache state HPL leaves them in. Its calls are what the small kernels'
models are fitted on (`hplsim validate`); see docs/validate.md.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from hplsim.cbuild import publish
from hplsim.errors import HplsimError
from hplsim.hpl.build import REAL, Flavor, hpl_binary
from hplsim.hpl.config import HplConfig
from hplsim.hpl.kernels import C_HEADER, traced_routines
from hplsim.paths import cache_dir, csrc_dir

TRACE_SOURCE = "hpl-trace/hplsim_trace.c"
TIMED_REGION = "HPL_pdgesv"
#: every kernel the tracer times (the table's `traced`), plus HPL_pdgesv (the timed region)
WRAPPED = (TIMED_REGION, *traced_routines())
TRACE_COLUMNS = ("function", "m", "n", "k", "m0", "m1", "side", "duration", "start", "host", "cpu", "core", "rank",
                 "ld")


def _trace_object() -> Path:
    src = csrc_dir() / TRACE_SOURCE
    flags = ("-O2", "-std=gnu11", "-Wall")
    header = csrc_dir() / C_HEADER  # the tracer includes the table of kernels' header (names, sizes)
    key = hashlib.sha256(src.read_bytes() + header.read_bytes() + repr(flags).encode()).hexdigest()[:16]
    dest = cache_dir() / "builds" / f"hpl-trace-{key}"
    obj = dest / "hplsim_trace.o"
    if obj.exists():
        return obj
    if shutil.which("cc") is None:
        raise HplsimError("cc not found: install build-essential (./bootstrap does)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".trace-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        proc = subprocess.run(["cc", *flags, "-I", str(header.parent), "-c", str(src), "-o", str(out / obj.name)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            raise HplsimError(f"building the kernel tracer failed: {lines[-1] if lines else 'no output'}")
        publish(out, dest, obj)
    return obj


def traced_flavor() -> Flavor:
    """The real HPL's build plus the tracer (the object's path carries its content hash,
    so an edit of the tracer rebuilds)."""
    wraps = tuple(f"-Wl,--wrap={name}" for name in WRAPPED)
    return Flavor("real-traced", REAL.cc, REAL.cflags, (str(_trace_object()), *wraps, *REAL.libs), False)


def traced_binary(quiet: bool = False) -> Path:
    return hpl_binary(traced_flavor(), quiet=quiet)


def read_traces(directory: Path) -> pd.DataFrame:
    """Every rank's trace-<rank>.csv of a traced run, one row per call (HPL_pdgesv rows
    included: filter ``function != TIMED_REGION`` for kernel calls)."""
    files = sorted(Path(directory).glob("trace-*.csv"))
    if not files:
        raise HplsimError(f"the traced HPL wrote no trace in {directory}")
    frames = [pd.read_csv(f, dtype={"side": str, "host": str}) for f in files]
    out = pd.concat(frames, ignore_index=True)
    out["side"] = out["side"].fillna("")
    return out


def trace_kernels(traced: Sequence[HplConfig], out: Path, launch,
                  progress: Callable[[str], None] | None = None) -> Path:
    """Run the traced HPL once on each of `traced` (`calibrate.hpl_designs.trace_configs`);
    the archive (kind hpl, with results/kernels.csv) is `out`."""
    from hplsim.real.run import run_real

    done = run_real(traced, launch, repeat=1, out=out, trace=True, progress=progress, keep_outputs=True)
    assert done.archive is not None
    return done.archive

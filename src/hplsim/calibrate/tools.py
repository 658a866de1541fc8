"""Build the calibration programs of csrc/calib: the dgemm/dtrsm timer (cc + OpenBLAS) and
the MPI timer (OpenMPI's mpicc). Cached under a key hashing the sources, the flags and the
compilers' versions, so an edit rebuilds and concurrent builders never see half a binary
(each builds in a temporary directory renamed into place)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hplsim.cbuild import compiler_version, publish
from hplsim.errors import HplsimError
from hplsim.hpl.kernels import C_HEADER
from hplsim.paths import cache_dir, csrc_dir

BLAS_TOOL = "hplsim-calib-blas"
MPI_TOOL = "hplsim-calib-mpi"


@dataclass(frozen=True)
class Tool:
    name: str
    cc: str
    source: str
    flags: tuple[str, ...]
    libs: tuple[str, ...]
    package: str  # Debian package that provides what is missing


TOOLS = (
    Tool(BLAS_TOOL, "cc", "calib_blas.c", ("-O2", "-std=gnu11", "-Wall"), ("-lopenblas", "-lm"),
         "libopenblas-dev and build-essential"),
    Tool(MPI_TOOL, "mpicc", "calib_mpi.c", ("-O2", "-std=gnu11", "-Wall"), (), "libopenmpi-dev"),
)


def sources_dir() -> Path:
    return csrc_dir() / "calib"


def build_key() -> str:
    h = hashlib.sha256()
    # calib_blas.c includes the table of kernels' header from the runtime's folder
    for path in [*sorted(sources_dir().glob("*.[ch]")), csrc_dir() / C_HEADER]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for tool in TOOLS:
        h.update(repr((tool.name, tool.cc, tool.flags, tool.libs, compiler_version(tool.cc))).encode())
    return h.hexdigest()[:16]


def _compile(tool: Tool, out: Path) -> None:
    if shutil.which(tool.cc) is None:
        raise HplsimError(f"{tool.cc} not found: install {tool.package} (./bootstrap does)")
    header_dir = (csrc_dir() / C_HEADER).parent  # calib_blas.c includes the table of kernels' header
    argv = [tool.cc, *tool.flags, "-I", str(sources_dir()), "-I", str(header_dir), "-o", str(out),
            str(sources_dir() / tool.source), *tool.libs]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        hint = f" (install {tool.package}?)" if "cannot find" in proc.stderr or "No such file" in proc.stderr else ""
        raise HplsimError(f"building {tool.name} failed: {lines[-1] if lines else 'no output'}{hint}")


def build_calibration_tools(force: bool = False) -> dict[str, Path]:
    """Paths of the calibration programs (name -> executable), building them if needed."""
    dest = cache_dir() / "builds" / f"calib-{build_key()}"
    paths = {tool.name: dest / tool.name for tool in TOOLS}
    if not force and all(p.exists() for p in paths.values()):
        return paths
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".calib-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        for tool in TOOLS:
            _compile(tool, out / tool.name)
        if force and dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        publish(out, dest, paths[TOOLS[-1].name])
    return paths

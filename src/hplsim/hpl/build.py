"""Build HPL 2.0 twice from the same patched source: emulated (smpicc + our kernel-model
runtime, no BLAS) and real (mpicc + OpenBLAS). Builds are cached under a key that hashes
everything that goes into them, so a change of the patch, the runtime or a flag rebuilds,
and concurrent builders never see a half-built binary (build in a temp dir, then rename)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from hplsim.cbuild import compiler_version, publish
from hplsim.errors import HplsimError
from hplsim.hpl import source
from hplsim.hpl.kernels import replaced_hpl_files
from hplsim.paths import cache_dir, csrc_dir

PATCH = "hpl-patch/hpl-2.0-hplsim.patch"
DRIVER = "hpl-driver/hplsim_driver.c"
RUNTIME_DIR = "kernel-models"
RUNTIME_SOURCES = ("runtime.c", "fatal.c", "model.c", "rng.c", "blas.c", "hpl_kernels.c", "panel.c", "probe.c", "mailbox.c", "comms.c",
                   "pipid.c", "sharedtext.c",
                   "progress.c", "matrix.c", "trace.c", "exchange.c", "netlaws.c", "simgrid_config.cpp")
# The trace recorder wraps HPL's MPI calls and phase functions at link time, and pipid.c
# HPL_pipid: one `-Wl,--wrap=NAME` per `__wrap_NAME` a runtime source defines (declared
# there, once).
SAMPLER_SOURCES = ("sampler.c", "model.c", "rng.c")
# Preloaded into the simulation process (see the source for why).
PRELOAD_SOURCE = "sim-preload/thread_clock.c"
PRELOAD_LIBRARY = "libhplsim-preload.so"

# HPL's own kernels that the runtime replaces in the emulated binary (the table of kernels').
MODELLED_HPL_FILES = replaced_hpl_files()

# Both builds use HPL_NO_MPI_DATATYPE (hence HPL_COPY_L): with derived datatypes SMPI would
# pack the L panel with real memcpy at every broadcast hop, and the real build follows the
# same code path so that what is emulated is what is measured.
COMMON_DEFINES = ("-DHPL_CALL_CBLAS", "-DHPL_NO_MPI_DATATYPE")
# Bump when what a build directory contains changes (not only how its binary is built).
BUILD_LAYOUT = 2


@dataclass(frozen=True)
class Flavor:
    name: str
    cc: str
    cflags: tuple[str, ...]
    libs: tuple[str, ...]
    with_runtime: bool


# Every simulated rank gets its own copy of the emulated binary (dlopen privatization): its
# text is paid once per rank, so optimise for size and drop what HPL's driver never calls.
EMULATED = Flavor("emulated", "smpicc",
                  ("-Os", "-ffunction-sections", "-fdata-sections", *COMMON_DEFINES, "-DHPLSIM_EMULATION"),
                  ("-Wl,--gc-sections", "-lstdc++", "-lm"), True)
# A diagnostic build: HPL's own per-phase timers (factorization, swaps, update, …). The
# timers call MPI_Wtime, which SMPI may charge (smpi/wtime): run it with smpi/wtime:0.
EMULATED_TIMING = Flavor("emulated-timing", "smpicc", (*EMULATED.cflags, "-DHPL_DETAILED_TIMING"), ("-lstdc++", "-lm"),
                         True)
REAL = Flavor("real", "mpicc", ("-O3", *COMMON_DEFINES), ("-lopenblas", "-lm"), False)
# The real HPL with the same per-phase timers as EMULATED_TIMING (`run-real --phases`).
REAL_TIMING = Flavor("real-timing", "mpicc", (*REAL.cflags, "-DHPL_DETAILED_TIMING"), REAL.libs, False)


def _require(cc: str) -> None:
    if shutil.which(cc) is None:
        pkg = "libsimgrid-dev" if cc == "smpicc" else "libopenmpi-dev"
        raise HplsimError(f"{cc} not found: install {pkg} (./bootstrap does)")


def _wrap_flags() -> list[str]:
    text = "\n".join((csrc_dir() / RUNTIME_DIR / f).read_text() for f in RUNTIME_SOURCES)
    names = {*re.findall(r"\b__wrap_(\w+)\s*\(", text),
             *re.findall(r"^WRAP_PANEL_VOID\((\w+),", text, re.M),
             *re.findall(r"^WRAP_PANEL\(\w+, (\w+),", text, re.M)}
    return [f"-Wl,--wrap={name}" for name in sorted(names)]


def _key(flavor: Flavor) -> str:
    h = hashlib.sha256()
    h.update(source.SHA256.encode())
    files = [PATCH, DRIVER]
    if flavor.with_runtime:
        files += [f"{RUNTIME_DIR}/{f}" for f in (*RUNTIME_SOURCES, "sampler.c")]
        files += sorted(f"{RUNTIME_DIR}/{header.name}" for header in (csrc_dir() / RUNTIME_DIR).glob("*.h"))
        files.append(PRELOAD_SOURCE)
    for rel in files:
        h.update(rel.encode())
        h.update((csrc_dir() / rel).read_bytes())
    h.update(repr((flavor, compiler_version(flavor.cc), BUILD_LAYOUT)).encode())
    return h.hexdigest()[:16]


def _run(argv: list[str], cwd: Path) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise HplsimError(f"build step failed: {' '.join(argv[:3])} …: {detail[-1] if detail else 'no output'}")


def _compile_all(jobs: list[tuple[list[str], Path]]) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for fut in [pool.submit(_run, argv, cwd) for argv, cwd in jobs]:
            fut.result()


def _build(flavor: Flavor, dest: Path) -> None:
    _require(flavor.cc)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{flavor.name}-") as tmp:
        work = Path(tmp)
        hpl = source.extract_hpl(work / "hpl")
        _run(["patch", "-p1", "--quiet", "-i", str(csrc_dir() / PATCH)], cwd=hpl)
        sources = sorted(
            p for p in [*hpl.glob("src/*/*.c"), *hpl.glob("testing/*/*.c")]
            if not (flavor.with_runtime and str(p.relative_to(hpl)) in MODELLED_HPL_FILES)
        )
        sources.append(csrc_dir() / DRIVER)
        include = ["-I", str(hpl / "include")]
        if flavor.with_runtime:
            runtime = csrc_dir() / RUNTIME_DIR
            include += ["-I", str(runtime)]
            sources += [runtime / f for f in RUNTIME_SOURCES]
        objdir = work / "obj"
        objdir.mkdir()
        jobs, objects = [], []
        for i, src in enumerate(sources):
            obj = objdir / f"{i:03d}_{src.stem}.o"
            objects.append(str(obj))
            jobs.append(([flavor.cc, *flavor.cflags, *include, "-c", str(src), "-o", str(obj)], work))
        _compile_all(jobs)
        out = work / "out"
        out.mkdir()
        shutil.copytree(hpl / "include", out / "include")  # for the runtime's unit tests
        wraps = _wrap_flags() if flavor.with_runtime else []
        _run([flavor.cc, "-o", str(out / "xhpl"), *objects, *wraps, *flavor.libs], cwd=work)
        if flavor.with_runtime:
            runtime = csrc_dir() / RUNTIME_DIR
            _run(["cc", "-O2", "-I", str(runtime), "-o", str(out / "hplsim-model-sampler"),
                  *[str(runtime / f) for f in SAMPLER_SOURCES], "-lm"], cwd=work)
            _run(["cc", "-O2", "-shared", "-fPIC", "-o", str(out / PRELOAD_LIBRARY),
                  str(csrc_dir() / PRELOAD_SOURCE), "-ldl"], cwd=work)
        publish(out, dest, dest / "xhpl")


def hpl_binary(flavor: Flavor = EMULATED, quiet: bool = False) -> Path:
    """Path of the (cached) xhpl of `flavor`, building it first if needed."""
    dest = cache_dir() / "builds" / f"hpl-{flavor.name}-{_key(flavor)}"
    binary = dest / "xhpl"
    if not binary.exists():
        if not quiet:
            click.echo(f"hplsim: building the {flavor.name} HPL (once) …", err=True)
        _build(flavor, dest)
    return binary


def sampler_binary() -> Path:
    return hpl_binary(EMULATED, quiet=True).parent / "hplsim-model-sampler"


def preload_library(binary: Path) -> Path:
    """The library preloaded into the simulation of `binary` (an emulated build)."""
    return binary.parent / PRELOAD_LIBRARY

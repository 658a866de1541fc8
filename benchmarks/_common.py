"""Helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]


def reference_dir(explicit: str | None = None) -> Path:
    """The folder holding the Dahu reference data: `explicit` (--data), else the copy that
    ships with the project (reference/README.md)."""
    c = Path(explicit) if explicit else REPO / "reference"
    if (c / "dahu").is_dir():
        return c / "dahu"
    raise SystemExit(f"reference data not found in {c} (no dahu/ folder there)")


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def machine() -> dict:
    """What a timing depends on: the CPU, its cores, the memory, the OS, and how loaded the
    machine was when the figures were written (a shared machine's timings move with it)."""
    import os
    import platform

    from hplsim.sysinfo import meminfo_kib

    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    total = meminfo_kib("MemTotal")
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"cpu": cpu or platform.processor() or None, "cores": os.cpu_count(),
            "ram_bytes": None if total is None else total * 1024, "os": f"{platform.system()} {platform.release()}",
            "load_average": load}


def _git(*args: str) -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def command_line(argv: list[str] | None = None) -> str:
    """The command as it would be typed again at the repository's root."""
    import shlex

    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    try:
        argv[0] = str(script.relative_to(REPO))
    except ValueError:
        pass
    return shlex.join([".venv/bin/python", *argv])


def provenance(argv: list[str] | None = None) -> dict:
    """Where a results file's figures come from. `modified`: the tracked files under the
    code's folders that differed from `commit` (others edit the same working tree, so a
    clean commit cannot be assumed)."""
    import datetime as dt

    changed = _git("diff", "--name-only", "HEAD", "--", "src", "csrc", "benchmarks")
    return {"commit": _git("rev-parse", "HEAD"), "modified": sorted(changed.splitlines()) if changed else [],
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "command": command_line(argv)}


def with_provenance(doc, argv: list[str] | None = None) -> dict:
    """`doc` with a ``provenance`` key; a list (rows) becomes ``{"rows": doc}``. Readers of
    the older files keep working: a dict's own keys are left where they were."""
    if isinstance(doc, list):
        doc = {"rows": doc}
    if not isinstance(doc, dict) or "provenance" in doc:
        raise TypeError("a benchmark's figures must be a dict without a 'provenance' key, or a list")
    return {"provenance": provenance(argv), **doc}


def write_json(path: str | Path | None, doc) -> None:
    """`--json PATH`, if given, through hplsim's one writer (atomic, numpy's scalars as
    numbers), with the commit, date, machine and command that produced it
    (benchmarks/results/ holds the published ones; benchmarks/tables.py reads them)."""
    if path:
        from hplsim.outputs import write_json as write

        write(path, with_provenance(doc), "the figures (--json)")


class Parser(argparse.ArgumentParser):
    """argparse with the project's error rule: one ``hplsim: error:`` line, exit code 2
    (argparse's own error prints the usage first)."""

    def error(self, message: str):  # type: ignore[override]
        print(f"hplsim: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
        sys.exit(2)


def run_main(main: Callable[[], int | None]) -> None:
    """A benchmark's entry point: an HplsimError is one ``hplsim: error:`` line and its
    exit code, an interruption one line and 130 (or 128 + the signal), never a traceback."""
    from hplsim.errors import HplsimError, Interrupted
    from hplsim.processes import handle_signals

    handle_signals()
    try:
        sys.exit(main() or 0)
    except HplsimError as exc:
        print(f"hplsim: error: {exc}", file=sys.stderr, flush=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("hplsim: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
    except Interrupted as exc:
        print(f"hplsim: interrupted by {exc}", file=sys.stderr, flush=True)
        sys.exit(128 + exc.signum)


def require_files(**options: Path | None) -> None:
    """A what-if file option (`--platform`, `--model`) that names no file is an error line.
    The sweep spec would refuse it too, but naming its field, not the option, and only
    after the emulated HPL's build."""
    from hplsim.errors import HplsimError

    for option, path in options.items():
        if path is not None and not path.is_file():
            raise HplsimError(f"--{option} {path}: no such file")


def reference_data(explicit: str | None = None) -> Path:
    """`reference_dir` for scripts that follow the error rule (run under `run_main`); a
    folder given that holds no ``dahu/`` is an error, not a fall-back."""
    from hplsim.errors import HplsimError

    if explicit and not (Path(explicit) / "dahu").is_dir():
        raise HplsimError(f"--data {explicit}: reference data not found (no dahu/ folder there)")
    try:
        return reference_dir(explicit)
    except SystemExit as exc:
        raise HplsimError(str(exc.code)) from None


# A results store's keys hold a run's configuration, seed, platform, model and hplsim's
# version, not the build of the emulated HPL: the benchmarks that keep their runs in a
# store name the default one after the build, and record the build in each sweep's text.
BUILD_TAG = "emulated HPL build:"


def emulated_build() -> str:
    """The emulated HPL's build (its cache folder's name, a hash of its sources)."""
    from hplsim.hpl.build import EMULATED, hpl_binary

    return hpl_binary(EMULATED).parent.name


def default_store(name: str, build: str) -> Path:
    return REPO / "results" / f"{name}-{build}.sqlite"


def stored_by_other_builds(store, hashes: set[str], build: str) -> int:
    """How many of the `hashes` are stored as ok by a sweep whose text names another build
    (or none: a sweep made by another tool)."""
    import re

    specs = {s["id"]: s["spec"] or "" for s in store.sweeps()}
    count = 0
    for r in store.runs("ok"):
        if r["hash"] in hashes:
            m = re.search(re.escape(BUILD_TAG) + r" (\S+)", specs.get(r["sweep_id"], ""))
            count += not m or m.group(1) != build
    return count


def warn_other_builds(count: int, build: str) -> None:
    if count:
        from hplsim.errors import warn

        warn(f"{count} stored run(s) were made by another build of the emulated HPL than {build} (the store's "
             "keys do not hold it): they are reused as they are; give a new --store to run them again")


def sweep_text(source: str, build: str, doc: dict) -> str:
    """A benchmark's sweep spec as the store keeps it, with the build it ran."""
    import yaml

    return f"# {source}; {BUILD_TAG} {build}\n" + yaml.safe_dump(doc, sort_keys=False)


def prepare_store(name: str, store: Path | None, json_path: Path | None, dry_run: bool) -> tuple[str, Path]:
    """(emulated build, store path): the default store named after the build; the store
    and the JSON output checked writable before any simulation (not on a dry run, which
    writes nothing)."""
    from hplsim.outputs import check_file

    build = emulated_build()
    path = store or default_store(name, build)
    if not dry_run:
        check_file(path, "the results store (--store)")
        if json_path:
            check_file(json_path, "the figures (--json)")
    return build, path


def stored_statuses(path: Path, hashes) -> dict[str, str]:
    """hash -> stored status, reading the store only if it exists (a dry run creates none)."""
    from hplsim.sweep.store import ResultStore

    if not path.exists():
        return {}
    with ResultStore(path, create=False) as store:
        return store.statuses(hashes)

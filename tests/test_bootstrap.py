"""./bootstrap is quiet when all goes well (one line per step, no packaging warnings) and
shows a failing step's whole output."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BOOTSTRAP = REPO / "bootstrap"


def _steps() -> list[str]:
    """The steps main() runs, in order, read from the script."""
    body = re.search(r"^main\(\) \{\n(.*?)^\}", BOOTSTRAP.read_text(), re.M | re.S)
    assert body is not None
    return re.findall(r"^\s*(step_\w+)\s*$", body.group(1), re.M)


def _bash(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=600)


def test_bootstrap_on_a_set_up_machine_prints_one_line_per_step():
    # everything is in place here: each step finds its part done (the builds are cached)
    out = subprocess.run([str(BOOTSTRAP)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = (out.stdout + out.stderr).splitlines()
    steps = _steps()
    assert len(steps) >= 6
    assert len(lines) == len(steps) <= 30, lines
    assert all(line.startswith("bootstrap: ") for line in lines), lines
    assert not [line for line in lines if re.search("warning|deprecat", line, re.I)]
    # each line says which part it is about, in the steps' order
    topics = [line.removeprefix("bootstrap: ").split(":")[0] for line in lines]
    assert topics == ["Debian packages", "HPL's source (Debian's hpcc)", ".venv", "huge pages",
                      "vm.max_map_count", "C programs (~/.cache/hplsim/builds)"]
    assert re.search(r"C programs .*(built|cached) .*emulated HPL", lines[-1])


def test_a_failing_step_shows_its_whole_output():
    script = ('source ./bootstrap\n'
              'quietly "a step" sh -c \'for i in $(seq 300); do echo "line $i"; done; echo "why it failed" >&2; exit 3\'\n'
              'echo "not reached"\n')
    out = _bash("set -e\n" + script)
    assert out.returncode == 3
    assert "not reached" not in out.stdout
    assert out.stdout == ""
    err = out.stderr.splitlines()
    assert err[0].startswith("bootstrap: a step failed (exit status 3): sh -c")
    assert [line for line in err if line.startswith("line ")] == [f"line {i}" for i in range(1, 301)]
    assert "why it failed" in err


def test_a_step_that_succeeds_prints_nothing_of_its_own():
    out = _bash('source ./bootstrap\nquietly "a step" sh -c "echo chatter; echo more chatter >&2"\necho "rc=$?"\n')
    assert (out.returncode, out.stdout, out.stderr) == (0, "rc=0\n", "")


def test_a_failing_step_stops_the_set_up():
    """main() stops at the first failing step: what follows it is not attempted."""
    out = _bash('source ./bootstrap\n'
                'step_packages() { say "Debian packages: all present"; }\n'
                'step_deb_src() { quietly "adding a deb-src entry" sh -c "echo no mirror answers; exit 100"; }\n'
                'step_venv() { echo "venv reached"; }\n'
                'main\n')
    assert out.returncode == 100
    assert out.stdout == "bootstrap: Debian packages: all present\n"
    assert "no mirror answers" in out.stderr and "venv reached" not in out.stdout + out.stderr


def test_the_package_metadata_builds_without_warnings(tmp_path):
    """setuptools deprecated the `license = { text = ... }` table: pip showed its warnings on every
    install. The metadata is built here as pip builds it for ./bootstrap (an isolated build
    environment with the [build-system] requirements)."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "src" / "hplsim").mkdir(parents=True)
    (tmp_path / "src" / "hplsim" / "__init__.py").write_text("")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Would install hplsim" in out.stdout
    assert not re.search("warning|deprecat", out.stdout + out.stderr, re.I), out.stdout + out.stderr

"""Run the shell examples of a Markdown document, as a user would paste them.

A fenced block whose info string is ``sh`` holds commands, one per line; each line starting
with ``hplsim`` runs with this checkout's hplsim. A fenced block preceded by
``<!-- file: NAME -->`` is written to NAME first. A command whose comment says ``slow``
runs only with ``-m slow``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

FENCE = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\s*\n)?```(?P<info>[^\n]*)\n(?P<body>.*?)```", re.S)


def examples(doc: Path) -> tuple[dict[str, str], list[str]]:
    files, commands = {}, []
    for m in FENCE.finditer(doc.read_text()):
        if m.group("file"):
            files[m.group("file")] = m.group("body")
        elif m.group("info").strip() == "sh":
            commands += [line.strip() for line in m.group("body").splitlines() if line.strip().startswith("hplsim")]
    return files, commands


def run_examples(doc: Path, workdir: Path, slow: bool = False) -> list[subprocess.CompletedProcess]:
    files, commands = examples(doc)
    for name, body in files.items():
        (workdir / name).write_text(body)
    results = []
    for command in commands:
        code, _, comment = command.partition("#")
        if "slow" in comment and not slow:
            continue
        argv = [sys.executable, "-m", "hplsim.cli", *shlex.split(code)[1:]]
        out = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=1800)
        assert out.returncode == 0, f"{doc.name}: `{code.strip()}` failed: {out.stderr.strip()}"
        results.append(out)
    return results

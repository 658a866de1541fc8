"""Run the shell examples of a Markdown document, as a user would paste them.

A fenced block whose info string is ``sh`` holds commands, one per line; each line starting
with ``hplsim`` runs with this checkout's hplsim. A ``python`` block runs as a script
(`run_python`), in a folder where the files it reads exist. A fenced block preceded by
``<!-- file: NAME -->`` is written to NAME first. A command whose comment says ``slow``
runs only with ``-m slow``.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from helpers import Result, run_cli

FENCE = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\s*\n)?```(?P<info>[^\n]*)\n(?P<body>.*?)```", re.S)


def examples(doc: Path) -> tuple[dict[str, str], list[str]]:
    files, commands = {}, []
    for m in FENCE.finditer(doc.read_text()):
        if m.group("file"):
            files[m.group("file")] = m.group("body")
        elif m.group("info").strip() == "sh":
            commands += [line.strip() for line in m.group("body").splitlines() if line.strip().startswith("hplsim")]
    return files, commands


def run_examples(doc: Path, workdir: Path, slow: bool = False, replace: dict[str, str] | None = None) -> list[Result]:
    """Each command through hplsim's entry point, in this process (`helpers.run_cli`);
    `replace`: text of the commands to replace first (a path of the page by the real one)."""
    files, commands = examples(doc)
    for name, body in files.items():
        (workdir / name).write_text(body)
    results = []
    for command in commands:
        code, _, comment = command.partition("#")
        if "slow" in comment and not slow:
            continue
        for old, new in (replace or {}).items():
            code = code.replace(old, new)
        out = run_cli(*shlex.split(code)[1:], cwd=workdir)
        assert out.returncode == 0, f"{doc.name}: `{code.strip()}` failed: {out.stderr.strip()}"
        results.append(out)
    return results


def python_blocks(doc: Path) -> list[str]:
    return [m.group("body") for m in FENCE.finditer(doc.read_text()) if m.group("info").strip() == "python"]


def run_python(doc: Path, workdir: Path, placeholders: dict[str, str] | None = None) -> list[dict]:
    """Run each ``python`` block of `doc` in `workdir`; a quoted placeholder of the page
    (``"DIR"``) is replaced by the name of a real file there. Returns each block's names."""
    blocks = python_blocks(doc)
    assert blocks, f"{doc.name} has no python example"
    old = Path.cwd()
    os.chdir(workdir)
    try:
        spaces = []
        for block in blocks:
            for name, real in (placeholders or {}).items():
                assert f'"{name}"' in block, (doc.name, name)
                block = block.replace(f'"{name}"', f'"{real}"')
            space: dict = {"__name__": f"{doc.stem}_example"}
            exec(compile(block, f"{doc} (python example)", "exec"), space)
            spaces.append(space)
        return spaces
    finally:
        os.chdir(old)

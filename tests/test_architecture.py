"""The layering that docs/architecture.md declares: no Python module imports from a stage
downstream of its own (the table of allowed imports is read from that page, declared
there only), and no include loop among the C modules of csrc/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "hplsim"
CSRC = REPO / "csrc"
DOC = REPO / "docs" / "architecture.md"
BASE_MODULES = {"errors", "paths", "outputs", "tables", "processes", "sysinfo", "clitypes", "cbuild", "formats", "quantiles", "__init__"}


def allowed_imports() -> dict[str, set[str]]:
    """package -> the packages it may import, from the page's table."""
    table = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`\w+`", cells[0]):
            table[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[2]))
    return table


def known_exceptions() -> set[tuple[str, str]]:
    """(importing module, imported module) pairs the page lists as exceptions to remove."""
    text = DOC.read_text().split("Known exceptions", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([\w.]+)` imports `([\w.]+)`", text, re.M))


def package_of(module: str) -> str:
    """hplsim.models.fit -> models; hplsim.errors -> base; hplsim.predict -> predict."""
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else "__init__"
    return "base" if name in BASE_MODULES else name


def imports(path: Path) -> list[str]:
    """Every hplsim module `path` imports, wherever the import statement is."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                base = module.split(".")[: -node.level] if path.name != "__init__.py" else \
                    module.split(".")[: len(module.split(".")) - node.level + 1]
                found.append(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.append(node.module)
    return [f for f in found if f == "hplsim" or f.startswith("hplsim.")]


def test_the_table_names_every_package():
    table = allowed_imports()
    packages = {package_of(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts))
                for p in PACKAGE.rglob("*.py")}
    assert packages == set(table), packages ^ set(table)
    for name, allowed in table.items():
        assert allowed <= set(table), (name, allowed - set(table))


def test_no_module_imports_from_a_stage_downstream_of_it():
    table = allowed_imports()
    exceptions = known_exceptions()
    wrong, used_exceptions = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        mine = package_of(module)
        for target in imports(path):
            theirs = package_of(target)
            if theirs == mine or theirs in table[mine]:
                continue
            pair = (module.removeprefix("hplsim."), target.removeprefix("hplsim."))
            if pair in exceptions:
                used_exceptions.add(pair)
            else:
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert wrong == [], "imports the table of docs/architecture.md does not allow:\n" + "\n".join(wrong)
    # an exception that no longer occurs leaves the list
    assert used_exceptions == exceptions, exceptions - used_exceptions


def test_the_layer_check_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    fake = tmp_path / "hplsim"
    (fake / "calibrate").mkdir(parents=True)
    source = fake / "calibrate" / "x.py"
    source.write_text("def f():\n    from hplsim.predict import predict\n    from ..sweep import spec\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert imports(source) == ["hplsim.predict", "hplsim.sweep"]
    assert {package_of(t) for t in imports(source)} - allowed_imports()["calibrate"] == {"predict", "sweep"}


# ----------------------------------------------------------------------------------- C

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
#: an `hplsim_` function declared (not defined) at file level: a prototype
PROTOTYPE = re.compile(r"^(?!static\b)[A-Za-z_][\w \t*]*\b(hplsim_\w+)\s*\([^;{)]*\)[^;{]*;", re.M)


def c_files() -> list[Path]:
    # tests/ holds stand-alone test programs that stub the runtime: not modules of it
    return sorted(p for p in CSRC.rglob("*") if p.suffix in (".c", ".h") and "tests" not in p.parts)


def module_of(path: Path) -> str:
    """runtime.c and runtime.h are one module."""
    return f"{path.parent.relative_to(CSRC)}/{path.stem}"


def module_graph(files: list[Path]) -> dict[str, set[str]]:
    by_name = {p.name: p for p in files}
    graph: dict[str, set[str]] = {module_of(p): set() for p in files}
    for p in files:
        for name in INCLUDE.findall(p.read_text()):
            target = (p.parent / name) if (p.parent / name).exists() else by_name.get(Path(name).name)
            if target is not None and module_of(target) != module_of(p):
                graph[module_of(p)].add(module_of(target))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_include_loop_in_csrc():
    assert find_cycle(module_graph(c_files())) is None, " -> ".join(find_cycle(module_graph(c_files())))


def test_the_runtime_modules_include_their_dependencies_not_the_umbrella():
    """The runtime's own files name the headers they use, so that the graph above sees
    every dependency; hplsim_runtime.h gathers them for HPL's sources and the driver."""
    runtime = CSRC / "kernel-models"
    for p in runtime.glob("*.[ch]"):
        if p.name != "hplsim_runtime.h":
            assert "hplsim_runtime.h" not in INCLUDE.findall(p.read_text()), p.name


def test_no_hidden_dependency_through_a_prototype_in_a_c_file():
    """A `.c` file that declares another module's function itself hides the dependency
    from the include graph (runtime.c once declared probe.c's report so)."""
    for p in c_files():
        if p.suffix == ".c":
            assert PROTOTYPE.findall(p.read_text()) == [], p


def test_the_loop_check_finds_a_loop(tmp_path):
    (tmp_path / "a.c").write_text('#include "b.h"\n')
    (tmp_path / "b.c").write_text('#include "a.h"\n')
    (tmp_path / "a.h").write_text("")
    (tmp_path / "b.h").write_text('#include <stdio.h>\n')
    files = sorted(tmp_path.iterdir())
    graph = {k.replace(str(tmp_path), ""): v for k, v in module_graph_at(tmp_path, files).items()}
    assert find_cycle(graph) is not None
    assert PROTOTYPE.findall("void hplsim_probe_report(FILE *out, int rank);\n") == ["hplsim_probe_report"]
    assert PROTOTYPE.findall("static int f(void);\nvoid hplsim_flush(void)\n{\n}\n") == []


def module_graph_at(root: Path, files: list[Path]) -> dict[str, set[str]]:
    global CSRC
    saved, CSRC = CSRC, root
    try:
        return module_graph(files)
    finally:
        CSRC = saved


@pytest.mark.parametrize("header", sorted(p.name for p in (CSRC / "kernel-models").glob("*.h")))
def test_each_runtime_header_has_a_guard(header):
    text = (CSRC / "kernel-models" / header).read_text()
    guard = re.search(r"#ifndef (\w+)\s*\n#define \1\b", text)
    assert guard and text.rstrip().endswith("#endif"), header

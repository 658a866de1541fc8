"""The table of kernels (hplsim.hpl.kernels) is the one declaration: the checked-in C header
and the model file page's table are its output, the C call sites and the tracer follow it, and
every Python view of the kernels changes with it (shown by adding a kernel to a copy)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hplsim.hpl import kernels
from hplsim.hpl.kernels import BLAS_SITE, HPL_SITE, KERNELS, Kernel

REPO = Path(__file__).resolve().parents[1]
RUNTIME = REPO / "csrc" / "kernel-models"

#: two hypothetical kernels: a BLAS one with a new size variable, and one of HPL's with a condition
NEW_BLAS = Kernel("drot", ("n", "incx"), BLAS_SITE, shape="rot")
NEW_HPL = Kernel("HPL_dlaswp07N", ("m", "n"), HPL_SITE, ("ld",), replaces="src/pauxil/HPL_dlaswp07N.c",
                 traced=False)
EXTENDED = (*KERNELS, NEW_BLAS, NEW_HPL)


def test_the_checked_in_header_is_the_tables():
    assert (RUNTIME / "kernels.h").read_text() == kernels.c_header(), \
        "csrc/kernel-models/kernels.h is stale: run python -m hplsim.hpl.kernels --write"


def test_the_model_file_page_lists_the_tables_kernels():
    page = (REPO / kernels.DOC_PAGE).read_text()
    assert kernels.with_markdown_table(page) == page, \
        f"{kernels.DOC_PAGE}'s kernel table is stale: run python -m hplsim.hpl.kernels --write"
    assert kernels.markdown_table() in page


def test_the_enum_keeps_its_order():
    """The runtime indexes per-kernel state by the enum: existing indexes never move."""
    first = ("K_DGEMM", "K_DTRSM", "K_DGEMV", "K_DGER", "K_DTRSV", "K_DAXPY", "K_DSCAL", "K_DSWAP", "K_IDAMAX",
             "K_DLACPY", "K_DLATCPY", "K_DLASWP00N", "K_DLASWP10N", "K_DLASWP01N", "K_DLASWP01T", "K_DLASWP02N",
             "K_DLASWP03N", "K_DLASWP03T", "K_DLASWP04N", "K_DLASWP04T", "K_DLASWP05N", "K_DLASWP05T",
             "K_DLASWP06N", "K_DLASWP06T")
    assert tuple(k.enum for k in KERNELS[:len(first)]) == first


def _enum(header: str) -> list[str]:
    body = re.search(r"enum hplsim_kernel \{(.*?)\};", header, re.S)
    assert body is not None
    return re.findall(r"\b(K_\w+)\b", body.group(1))


def _c_view(header: str, tmp_path: Path) -> list[str]:
    """What a C program reads from `header`: each kernel's index, name, slots and flag."""
    (tmp_path / "kernels.h").write_text(header)
    (tmp_path / "view.c").write_text(
        '#include <stdio.h>\n#include "kernels.h"\n'
        "int main(void) {\n"
        "  for (int k = 0; k < K_NKERNELS; k++) {\n"
        '    printf("%d %s %d", k, hplsim_kernels[k].name, hplsim_kernels[k].calibrated);\n'
        "    for (int s = 0; s < 3; s++) printf(\" %s\", hplsim_kernels[k].slots[s] ? hplsim_kernels[k].slots[s] : \"-\");\n"
        '    printf("\\n");\n  }\n  return 0;\n}\n')
    subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror", "-o", str(tmp_path / "view"), str(tmp_path / "view.c")],
                   check=True)
    return subprocess.run([str(tmp_path / "view")], capture_output=True, text=True, check=True).stdout.splitlines()


def test_a_kernel_added_to_the_table_reaches_the_generated_header(tmp_path):
    header = kernels.c_header(EXTENDED)
    assert _enum(header) == [*_enum(kernels.c_header())[:-1], "K_DROT", "K_DLASWP07N", "K_NKERNELS"]
    view = _c_view(header, tmp_path)
    n = len(KERNELS)
    assert view[n:] == [f"{n} drot 0 n incx -", f"{n + 1} HPL_dlaswp07N 0 m n ld"]
    assert view[:n] == _c_view(kernels.c_header(), tmp_path)
    assert (view[0], view[1], view[8]) == ("0 dgemm 1 m n k", "1 dtrsm 1 m n k", "8 idamax 0 n - -")
    assert (view[13], view[18]) == ("13 HPL_dlaswp01N 0 m n ld", "18 HPL_dlaswp04N 0 m0 m1 n")


def test_a_kernel_added_to_the_table_reaches_the_markdown_table():
    table = kernels.markdown_table(EXTENDED)
    assert "| `drot` | n, incx |  |  |" in table
    assert "| `HPL_dlaswp07N` | m, n | ld |" in table


def test_a_kernel_added_to_the_table_reaches_every_python_view():
    """A fresh interpreter extends the table, then imports the modules that derive from it."""
    script = f"""
import json
from hplsim.hpl import kernels
from hplsim.hpl.kernels import Kernel
kernels.KERNELS = (*kernels.KERNELS, Kernel("drot", ("n", "incx"), "{BLAS_SITE}"),
                   Kernel("HPL_dlaswp07N", ("m", "n"), "{HPL_SITE}", ("ld",),
                          replaces="src/pauxil/HPL_dlaswp07N.c", traced=False))
from hplsim.models import modelfile, readers, time_share
from hplsim.calibrate import designs
from hplsim.real import trace
from hplsim.hpl import build
import pandas as pd
calls = readers._kernel_table(pd.DataFrame({{"function": ["cblas_drot", "HPL_DLASWP07N"], "n": [5, 6],
                                             "incx": [1, None], "m": [None, 7], "ld": [None, 8],
                                             "duration": [1e-6, 2e-6]}}), "x.csv", readers.DAHU_HOST_FORMAT)
print(json.dumps(dict(
    variables=modelfile.KERNEL_VARIABLES["drot"], conditions=modelfile.CONDITION_VARIABLES["HPL_dlaswp07N"],
    kernels=list(calls["kernel"]), incx=list(calls["incx"].fillna(-1)), ld=list(calls["ld"].fillna(-1)),
    traced="drot" in time_share.TRACED_KERNELS, traced_swap="HPL_dlaswp07N" in time_share.TRACED_KERNELS,
    wrapped=trace.WRAPPED[-1], modelled="src/pauxil/HPL_dlaswp07N.c" in build.MODELLED_HPL_FILES,
    functions=list(designs.BLAS_FUNCTIONS)), default=str))
"""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got == dict(variables=["n", "incx"], conditions=["m", "n", "ld"], kernels=["drot", "HPL_dlaswp07N"],
                       incx=[1.0, -1.0], ld=[-1.0, 8.0], traced=True, traced_swap=False, wrapped="cblas_drot",
                       modelled=True, functions=["dgemm", "dtrsm"])


def test_the_table_refuses_what_the_runtime_cannot_pass():
    with pytest.raises(ValueError, match="declared twice"):
        kernels.check((*KERNELS, replace(NEW_BLAS, name="dgemm")))
    with pytest.raises(ValueError, match="1 to 3 distinct"):
        kernels.check((replace(NEW_HPL, variables=("m0", "m1", "n")),))
    with pytest.raises(ValueError, match="site"):
        kernels.check((replace(NEW_BLAS, site="runtime.c"),))
    with pytest.raises(ValueError, match="sided"):
        kernels.check((replace(NEW_BLAS, sided=True),))


def _defined_functions(source: str) -> dict[str, str]:
    """C function name -> its body, for the functions `source` defines at file level."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^\w[\w \t*]*?\b(\w+)\s*\([^;{]*?\)\s*\{(.*?)^\}", source, re.M | re.S)}


def test_every_kernel_has_its_call_site_in_the_runtime():
    """Each kernel's routine is defined in its site and reports its sizes under its own enum;
    nothing else reports a kernel."""
    reported = set()
    for site in (BLAS_SITE, HPL_SITE):
        functions = _defined_functions((RUNTIME / site).read_text())
        for k in KERNELS:
            if k.site == site:
                assert k.routine in functions, f"{k.routine} not defined in {site}"
                assert re.search(rf"hplsim_kernel\({k.enum},", functions[k.routine]), k.routine
        reported |= set(re.findall(r"hplsim_kernel\((K_\w+),", (RUNTIME / site).read_text()))
    assert reported == {k.enum for k in KERNELS}


def test_the_tracer_wraps_exactly_the_traced_kernels(tmp_path):
    obj = tmp_path / "trace.o"
    subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror", "-I", str(RUNTIME), "-c",
                    str(REPO / "csrc/hpl-trace/hplsim_trace.c"), "-o", str(obj)], check=True)
    symbols = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    wrapped = set(re.findall(r" T __wrap_(\w+)$", symbols, re.M))
    assert wrapped == {"HPL_pdgesv", *kernels.traced_routines()}


def test_the_builds_that_include_the_header_hash_it(tmp_path, monkeypatch):
    """The calibration tools and the tracer compile the header from the runtime's folder:
    an edit of the table rebuilds them."""
    from hplsim.calibrate import tools
    from hplsim.real import trace

    csrc = tmp_path / "csrc"
    shutil.copytree(REPO / "csrc" / "calib", csrc / "calib")
    shutil.copytree(REPO / "csrc" / "hpl-trace", csrc / "hpl-trace")
    (csrc / "kernel-models").mkdir()
    (csrc / kernels.C_HEADER).write_text(kernels.c_header())
    monkeypatch.setattr(tools, "csrc_dir", lambda: csrc)
    monkeypatch.setattr(trace, "csrc_dir", lambda: csrc)
    monkeypatch.setattr(trace, "cache_dir", lambda: tmp_path / "cache")
    keys = []
    # NEW_HPL is not traced: the tracer still compiles (drot's shape has no wrapper there)
    for header in (kernels.c_header(), kernels.c_header((*KERNELS, NEW_HPL))):
        (csrc / kernels.C_HEADER).write_text(header)
        keys.append((tools.build_key(), trace._trace_object().parent.name))
    assert keys[0][0] != keys[1][0] and keys[0][1] != keys[1][1]


#: The code the rule covers: C under csrc/ and Python under src/. Not the C unit tests (a test
#: calls the routines it tests by name) nor HPL's own code (the patch).
CODE_SUFFIXES = (".c", ".h", ".cpp", ".py")


def _code_without_comments(path: Path) -> str:
    """The file's code: a comment may mention a kernel without declaring it."""
    text = path.read_text(errors="replace")
    if path.suffix == ".py":
        import io
        import tokenize
        kept = []
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            # docstrings are prose too: a string that is a statement of its own
            if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.line.strip() == tok.string):
                continue
            kept.append(tok.string)
        return " ".join(kept)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _code_files() -> list[Path]:
    files = [p for p in (REPO / "csrc").rglob("*") if p.suffix in CODE_SUFFIXES and "tests" not in p.parts]
    files += [p for p in (REPO / "src").rglob("*.py")]
    return sorted(files)


def test_each_kernel_name_is_written_in_at_most_three_code_files():
    """The table (kernels.py), the generated header and the call site: the tracer and the rest of
    the C code take the kernels from the header. The pipeline that measures, fits and tunes dgemm
    and dtrsm (the calibrated kernels: the calibration benchmark, which calls the real BLAS, and
    the Python stages) names them as the quantities it works on; the emulation's and the
    tracer's C are held to the rule for them too."""
    code = {p: _code_without_comments(p) for p in _code_files()}
    assert len([p for p in code if p.suffix == ".c"]) >= 15 and REPO / "src/hplsim/hpl/kernels.py" in code
    too_many = {}
    for k in KERNELS:
        # the name, its routine, its enumerator (HPL_dlaswp01T, cblas_dgemm, K_DLASWP01T, dgemm),
        # not a longer word that contains it (HPL_pdlaswp01T is HPL's distributed swap)
        short = k.name.removeprefix("HPL_")
        word = re.compile(rf"(?<![A-Za-z0-9])(?:HPL_|cblas_|K_)?{re.escape(short)}(?![A-Za-z0-9])", re.I)
        measuring = lambda p: p.suffix == ".py" or "calib" in p.parts  # noqa: E731
        files = {p.relative_to(REPO).as_posix() for p, text in code.items()
                 if not (k.calibrated and measuring(p)) and word.search(text)}
        # the table writes each name once, some through a helper (_swap("01T")): count it
        files.add("src/hplsim/hpl/kernels.py")
        if len(files) > 3:
            too_many[k.name] = sorted(files)
    assert too_many == {}

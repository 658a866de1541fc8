"""hplsim report as a person sees it: the examples of docs/report.md run, and the page they
write opens in headless Chromium with every section and figure drawn and nothing on the
console. Bad input leaves no file."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO
from docexamples import run_examples, run_python
from helpers import run_cli
from hplsim.report.browser import open_page
from test_sweep_run import hplsim

SECTIONS = {"trace": ["gantt", "breakdown", "chain", "phases", "kernels"],
            "sweep": ["best", "vs-n", "grid-nb", "whatif"],
            "model": ["dgemm-hosts", "kernels"],
            "calibration": ["measured-vs-expected", "residuals"],
            "check": ["verdicts", "control"]}


def report_in_process(*args: str) -> tuple[int, str]:
    """`hplsim report ARGS` through the CLI's own entry point, in this process (fast)."""
    r = run_cli("report", *args)
    return r.returncode, r.stderr


@pytest.fixture(scope="module")
def doc_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("report-doc")
    results = run_examples(REPO / "docs" / "report.md", d)
    assert len(results) == 6
    assert "wrote report.html (5 sections, 15 figures" in results[-1].stderr
    return d


def figure_ids(html: str) -> list[str]:
    return re.findall(r'<div class="figure" id="([^"]+)"', html)


def test_page_opens_with_every_figure_drawn_and_a_quiet_console(doc_run, tmp_path):
    page = doc_run / "report.html"
    text = page.read_text()
    expected = [f"{s}-{f}" for s, figs in SECTIONS.items() for f in figs]
    assert figure_ids(text) == expected
    head, bundle_and_rest = text.split("<script>", 1)
    rest = head + bundle_and_rest.split("</script>", 1)[1]  # the page without Plotly's inlined bundle
    assert not re.search(r"<(script|link|img)[^>]*\b(src|href)=", rest)  # self-contained: nothing to fetch
    view = open_page(page, screenshot=tmp_path / "report.png")
    assert view.console == []
    drawn = re.findall(r'<div class="figure" id="([^"]+)".*?<div class="plot[^"]*"[^>]*data-rendered="1"', view.dom,
                       re.S)
    assert drawn == expected
    assert view.attribute("data-render-ms") is not None
    for s in SECTIONS:
        assert f'<section id="{s}">' in view.dom
    for fid in expected:  # a caption and a table under every figure
        block = view.dom.split(f'id="{fid}"', 1)[1].split('<div class="figure"', 1)[0]
        assert '<p class="caption">' in block and "<table" in block
    assert view.screenshot is not None and view.screenshot.stat().st_size > 50_000
    print(f"screenshot: {view.screenshot}")


def test_a_broken_figure_shows_on_the_console(tmp_path):
    """The console check can fail: in a small report (a model's page, one section), a
    figure whose data the page cannot read is reported as the browser's SyntaxError."""
    from hplsim.presets import DEFAULT

    code, err = report_in_process(str(DEFAULT.model), "-o", str(tmp_path / "model.html"))
    assert code == 0, err
    text = (tmp_path / "model.html").read_text()
    assert '-json">{' in text
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace('-json">{', '-json">{not json', 1))
    view = open_page(broken)
    assert any("SyntaxError" in m for m in view.console), view.console


def test_acceptance_interface(doc_run, tmp_path):
    for src in ("trace", "whatif.sqlite", "model.yaml"):
        code, err = report_in_process(str(doc_run / src), "-o", str(tmp_path / f"{src}.html"))
        assert code == 0, err
        assert (tmp_path / f"{src}.html").stat().st_size > 4_000_000  # Plotly inlined
    assert {p.name for p in tmp_path.iterdir()} == {"trace.html", "whatif.sqlite.html", "model.yaml.html"}


def test_trace_format_python_example(doc_run):
    """docs/formats/trace.md's reader example, on the trace the report page's examples wrote."""
    (space,) = run_python(REPO / "docs" / "formats" / "trace.md", doc_run, {"DIR": "trace"})
    events = space["trace"].events
    assert len(events) > 0 and events["rank"].nunique() == 16  # -P 4 -Q 4
    sends, receiver, holder = space["sends"], space["receiver"], space["holder"]
    assert len(sends) > 0 and len(receiver) == len(holder) == len(sends)
    assert set(receiver.phase) <= {"fact", "bcast", "swap", "update", "trsv", "none", ""}
    assert (receiver.name != "").mean() > 0.99  # receivers are inside their recorded events
    assert receiver.name.isin(set(events.name.astype(str)) | {""}).all()
    assert set(holder) <= set(range(16)) and (space["hops"] >= 0).all()


def test_dahu_history_verdicts_are_check_verdicts(dahu_dir, tmp_path):
    """The published Dahu history: the page says what `hplsim check` says (docs/check.md)."""
    code, err = report_in_process(str(dahu_dir / "dgemm_calibration_history.csv"), "-o",
                                  str(tmp_path / "h.html"))
    assert code == 0, err
    text = (tmp_path / "h.html").read_text()
    assert "1456 observations of 64 host/CPU series" in text and "r = 1 and 5): 64 ok." in text


def test_mpi_calibration_shows_the_fits_breakpoints(dahu_dir, tmp_path):
    """Dahu's published MPI calibration (four clusters): a fit and residuals per cluster,
    whose breakpoints are the ones `hplsim fit --network` writes into the SMPI options."""
    code, err = report_in_process(str(dahu_dir / "mpi_calibration.csv"), "-o", str(tmp_path / "n.html"))
    assert code == 0, err
    text = (tmp_path / "n.html").read_text()
    clusters = ["dahu", "gros", "paravance", "pyxis"]
    assert figure_ids(text) == [f"network-{kind}-{c}" for c in clusters for kind in ("fit", "residuals")]
    assert run_cli("fit", dahu_dir / "mpi_calibration.csv", "--network", "--cluster", "dahu", "-o",
                   tmp_path / "net.yaml").returncode == 0
    opts = (tmp_path / "net.yaml").read_text()
    lat = re.search(r"smpi/lat-factor: (\S+)", opts).group(1)
    fitted = [int(e.split(":")[0]) for e in lat.split(";")][1:]
    caption = re.search(r"dahu: every measured MPI call.*?breakpoints \(([^;)]*?) bytes;", text).group(1)
    assert [int(b.replace(",", "")) for b in caption.split(", ")] == fitted


@pytest.mark.slow  # Chromium again; the page test above renders the other figure kinds
def test_mpi_calibration_page_renders_quietly(dahu_dir, tmp_path):
    code, err = report_in_process(str(dahu_dir / "mpi_calibration.csv"), "-o", str(tmp_path / "n.html"))
    assert code == 0, err
    view = open_page(tmp_path / "n.html")
    assert view.console == []
    assert view.dom.count('data-rendered="1"') == 8


def bad_inputs(doc_run: Path, d: Path) -> dict[str, tuple[list[Path], str]]:
    """What a user may get wrong -> (the inputs, what the error says). A good input comes
    first in most, so that a section built before the bad one must not reach the disk."""
    mixed = d / "mixed"
    shutil.copytree(doc_run / "trace", mixed)
    shutil.copy(doc_run / "first2" / "trace.parquet", mixed / "trace.parquet")
    corrupt = d / "corrupt.sqlite"
    data = (doc_run / "whatif.sqlite").read_bytes()
    corrupt.write_bytes(data[:100] + b"\xff" * (len(data) - 100))
    empty = d / "empty.sqlite"
    shutil.copy(doc_run / "whatif.sqlite", empty)
    with sqlite3.connect(empty) as con:
        con.execute("DELETE FROM runs")
    notes = d / "notes.txt"
    notes.write_text("hello\n")
    model = doc_run / "model.yaml"
    return {"mixed trace": ([model, mixed], "from another run"),
            "corrupt store": ([model, corrupt], "not an hplsim results store"),
            "empty sweep": ([model, empty], "no successful run"),
            "archive without model": ([doc_run / "today.zip"], "give the model file too"),
            "other file": ([model, notes], "not a trace or validate directory"),
            "missing": ([model, d / "nope"], "no such file")}


def test_bad_input_one_line_and_no_file(doc_run, tmp_path):
    for what, (paths, message) in bad_inputs(doc_run, tmp_path).items():
        out_file = tmp_path / "out.html"
        code, err = report_in_process(*map(str, paths), "-o", str(out_file))
        assert code != 0, what
        assert err.startswith("hplsim: error:") and err.count("\n") == 1, (what, err)
        assert message in err, (what, err)
        assert not out_file.exists() and not list(tmp_path.glob(".out.html*")), what


@pytest.mark.slow
def test_hundred_run_sweep_report_under_10_mb(tmp_path):
    (tmp_path / "spec.yaml").write_text(
        "hpl: {n: {from: 1000, to: 2200, step: 200}, nb: [32, 64], ranks: 4, bcast: [1ring, 2ringM]}\n"
        "seeds: [1, 2]\n")  # 7 N x 2 NB x 2 grids x 2 BCAST x 2 seeds = 112 runs
    hplsim("sweep", "spec.yaml", "--db", "s.sqlite", "--no-progress", cwd=tmp_path)
    hplsim("report", "s.sqlite", "-o", "s.html", cwd=tmp_path)
    assert (tmp_path / "s.html").stat().st_size <= 10_000_000
    view = open_page(tmp_path / "s.html", screenshot=tmp_path / "s.png")
    assert view.console == [] and view.dom.count('data-rendered="1"') == 3


@pytest.mark.slow
def test_validate_run_report(tmp_path):
    """A real (tiny) validate run and the model it fitted: both sections drawn, the table is the run's."""
    hplsim("validate", "-N", "2000", "--nb", "64", "-P", "1,2", "-Q", "2,1", "--repeat", "2", "--quick",
           "--out", "v", cwd=tmp_path)
    hplsim("report", "v", "v/model.yaml", "-o", "v.html", cwd=tmp_path)
    view = open_page(tmp_path / "v.html", screenshot=tmp_path / "v.png")
    assert view.console == []
    ids = figure_ids(view.dom)
    assert ids[:2] == ["validate-predicted-vs-real", "validate-errors"] and "model-kernels" in ids
    assert view.dom.count('data-rendered="1"') == len(ids)
    table = pd.read_csv(tmp_path / "v" / "validation.csv")
    for configuration in table["configuration"]:
        assert configuration in view.dom.split('id="validate-predicted-vs-real"')[1].split("</table>")[0]

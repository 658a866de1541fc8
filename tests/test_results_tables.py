"""Every published table of figures is what benchmarks/results/ renders (benchmarks/tables.py),
every results file says where it comes from, and the renderers read the files the
benchmarks really write."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import _common  # noqa: E402
import tables  # noqa: E402


def test_pages_tables_agree_with_the_results():
    assert tables.disagreements() == []


def test_every_page_table_is_a_known_one():
    found = [m.group("name") for page in tables.PAGES for m in tables.MARK.finditer(page.read_text())]
    assert set(found) == set(tables.TABLES) and "trust" in found and "cost" in found


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "results").glob("*.json")), ids=lambda p: p.name)
def test_every_results_file_says_where_it_comes_from(path):
    p = json.loads(path.read_text())["provenance"]
    assert re.fullmatch(r"[0-9a-f]{40}", p["commit"]) and re.match(r"\d{4}-\d\d-\d\dT", p["date"])
    m = p["machine"]
    assert m["cpu"] and m["cores"] >= 1 and m["ram_bytes"] > 2**28
    assert re.search(rf"(^|[ /])benchmarks/{path.stem.split('-')[0]}\.py( |$)", p["command"]), p["command"]


def test_the_writer_adds_provenance_and_keeps_the_figures(tmp_path):
    _common.write_json(tmp_path / "rows.json", [{"n": 1}])
    _common.write_json(tmp_path / "doc.json", {"rows": [], "summary": {"a": 1}})
    rows, doc = (json.loads((tmp_path / f).read_text()) for f in ("rows.json", "doc.json"))
    assert rows["rows"] == [{"n": 1}] and doc["summary"] == {"a": 1}
    assert rows["provenance"]["commit"] == _common._git("rev-parse", "HEAD")
    assert doc["provenance"]["command"].startswith(".venv/bin/python ")
    with pytest.raises(TypeError):
        _common.with_provenance({"provenance": 1})


def test_command_line_is_the_one_to_type_at_the_root():
    argv = [str(REPO / "benchmarks" / "factorial.py"), "--bcast", "0", "--json", "a b.json"]
    assert _common.command_line(argv) == ".venv/bin/python benchmarks/factorial.py --bcast 0 --json 'a b.json'"


# ---- the renderers on files shaped as the benchmarks write them

def _dahu_validation(presets=("dahu",)) -> dict:
    """What benchmarks/dahu_validation.py writes (one part per preset), through its own
    summary function; dahu-2020's part with its own 3 % bound."""
    import dahu_validation

    real = {50_000: 100.0, 500_000: 200.0}
    rows = [dict(n=50_000, variant="stochastic", seed=1, gflops=101.0, real_gflops=100.0, sim_wall_s=300.0,
                 sim_memory_bytes=3.2e8),
            dict(n=500_000, variant="stochastic", seed=1, gflops=196.0, real_gflops=200.0, sim_wall_s=1980.0,
                 sim_memory_bytes=5.25e8)]
    parts = {}
    for name in presets:
        within = dahu_validation.PRESET_WITHIN[name]
        summary = dahu_validation.summarise(rows, real, {50_000: 99.0, 500_000: 201.0}, within)
        parts[name] = {"rows": rows, "summary": {"stochastic": summary},
                       "machine": dahu_validation.PRESET_MACHINE[name], "within_pct": within}
    # through JSON, as the file is read back: the per-N keys become strings
    return json.loads(json.dumps({"presets": parts, "store": "s.sqlite", "build": "b"}))


def _factorial() -> dict:
    import factorial

    s = factorial.Summary(36, 33, (2, 1, 1), -0.071, 0.91).as_dict()
    a = factorial.Summary(36, 32, (2, 1, 2), -0.089, 0.90).as_dict()
    return {"configurations": [], "summary": {"hplsim": s, "authors": a}}


def _closed_loop() -> dict:
    rows = [dict(n=n, nb=nb, p=p, q=q, error_pct=e) for n, nb, p, q, e in
            ((5000, 64, 1, 2, 2.0), (5000, 128, 2, 1, -4.0), (10000, 64, 1, 2, 1.0), (2000, 64, 1, 2, 50.0))]
    s = {"configurations": 3, "median_abs_error_pct": 2.0, "max_abs_error_pct": 4.0, "median_spread_pct": 3.5}
    return {"rows": rows, "summary_n_ge_5000": s, "target": {"min_n": 5000}}


def _write(folder: Path, name: str, doc: dict) -> None:
    doc = {"provenance": _common.provenance([f"benchmarks/{name}.py"]), **doc}
    (folder / f"{name}.json").write_text(json.dumps(doc))


def test_a_missing_results_file_is_pending_never_a_figure(tmp_path):
    res = tables.Results(tmp_path)
    text = tables.render_table("trust", res) + tables.render_table("cost", res)
    assert "pending (`benchmarks/dahu_validation.py`)" in text
    assert "pending (`benchmarks/factorial.py --preset dahu-2020`)" in text
    assert not re.search(r"\d %", text)


def test_the_tables_render_the_benchmarks_files(tmp_path):
    _write(tmp_path, tables.DAHU, _dahu_validation())
    _write(tmp_path, tables.FACTORIAL, _factorial())
    _write(tmp_path, tables.CLOSED_LOOP, _closed_loop())
    trust = tables.render_table("trust", tables.Results(tmp_path))
    assert "mean \\|error\\| 1.5 %, largest −2.0 % (N = 500,000); 2 of 2 sizes within 5 % [1]" in trust
    trends = [line for line in trust.splitlines() if line.startswith("| The trend in N")]
    assert "+1.0 % at 50,000, −2.0 % at 500,000 [1]" in trends[0] and "`--preset dahu`" in trends[0]
    assert ("33 of 36 within 5 % relative, worst −7.1 % (2,128,1,1), Spearman 0.91 (the authors' emulation: "
            "32 of 36 within 5 % relative, worst −8.9 % (2,128,1,2), Spearman 0.90) [2]") in trust
    # N < the loop's 5,000 is left out, as its target does
    assert "NB 64: mean +1.5 %, largest \\|error\\| 2.0 %; NB 128: mean −4.0 %" in trust
    assert "grid 1×2: mean +1.5 %" in trust and "grid 2×1: mean −4.0 %" in trust
    assert "median \\|error\\| 2.0 %, largest 4.0 % (3 configurations, N ≥ 5,000" in trust
    # the file holds no dahu-2020 part: its rows are pending
    assert sum("pending (`benchmarks/dahu_validation.py --preset dahu-2020`)" in line for line in trust.splitlines()) == 2
    assert "[1] `benchmarks/results/dahu_validation.json`: " in trust and "`.venv/bin/python benchmarks/" in trust
    cost = tables.render_table("cost", tables.Results(tmp_path))
    assert "| 1,024 (32×32) | 500,000 | Dahu preset | 33 min | 525 MB | [1] |" in cost


def test_a_changed_figure_makes_the_page_disagree(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    _write(results, tables.DAHU, _dahu_validation())
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- table: trust (benchmarks/tables.py) -->\n<!-- end table -->\nmore\n")
    page.write_text(tables.render_page(page.read_text(), tables.Results(results)))
    assert tables.disagreements([page], results) == []
    doc = json.loads((results / "dahu_validation.json").read_text())
    doc["presets"]["dahu"]["summary"]["stochastic"]["mean_abs_error_pct"] = 0.5
    (results / "dahu_validation.json").write_text(json.dumps(doc))
    assert tables.disagreements([page], results) == ["page.md: table 'trust'"]


def test_adopt_records_provenance_and_the_command(tmp_path):
    src = tmp_path / "nsweep.json"
    src.write_text(json.dumps(_dahu_validation()))
    out = tables.adopt(src, tables.DAHU, ".venv/bin/python benchmarks/dahu_validation.py --json nsweep.json", tmp_path)
    doc = json.loads(out.read_text())
    assert doc["presets"] == _dahu_validation()["presets"]
    assert doc["provenance"]["command"].endswith("--json nsweep.json") and doc["provenance"]["adopted_from"] == str(src)


def test_adopt_keeps_the_provenance_of_a_run_written_by_the_shared_writer(tmp_path):
    """A benchmark run to a scratch path, then adopted: its commit, date and machine are the
    run's (a quiet machine), not the adoption's (perhaps a loaded one, another commit)."""
    run = {"commit": "0" * 40, "modified": [], "date": "2026-01-02T03:04:05+00:00",
           "machine": {"cpu": "X", "cores": 2, "ram_bytes": 1, "os": "Y", "load_average": [0.1, 0.1, 0.1]},
           "command": "bench --json scratch.json"}
    src = tmp_path / "scratch.json"
    src.write_text(json.dumps({"provenance": run, **_dahu_validation()}))
    out = tables.adopt(src, tables.DAHU, "bench --json benchmarks/results/x.json", tmp_path)
    p = json.loads(out.read_text())["provenance"]
    assert (p["commit"], p["date"], p["machine"]) == (run["commit"], run["date"], run["machine"])
    assert p["command"] == "bench --json benchmarks/results/x.json" and "note" not in p


def test_both_presets_of_one_n_sweep_file_each_with_its_bound(tmp_path):
    """dahu_validation.json holds both presets: dahu's rows say 'within 5 %', dahu-2020's
    'within 3 %' (the issue's bound on the repaired machine's sweep), both cite one file."""
    _write(tmp_path, tables.DAHU, _dahu_validation(("dahu", "dahu-2020")))
    trust = tables.render_table("trust", tables.Results(tmp_path))
    lines = [line for line in trust.splitlines() if line.startswith("| Gflops of one configuration")]
    assert len(lines) == 2
    assert "2 of 2 sizes within 5 % [1]" in lines[0] and "`--preset dahu`" in lines[0]
    assert "2 of 2 sizes within 3 % [1]" in lines[1] and "`--preset dahu-2020`" in lines[1]
    assert "pending (`benchmarks/dahu_validation.py`)" not in trust


def test_the_2020_sweep_may_come_from_its_own_file(tmp_path):
    """A run of `--preset dahu-2020` alone writes its own file (dahu_validation-2020.json):
    its rows come from there, with its 3 % bound, the 2019 rows from the other file."""
    _write(tmp_path, tables.DAHU, _dahu_validation(("dahu",)))
    _write(tmp_path, "dahu_validation-2020", _dahu_validation(("dahu-2020",)))
    trust = tables.render_table("trust", tables.Results(tmp_path))
    lines = [line for line in trust.splitlines() if line.startswith("| Gflops of one configuration")]
    assert "within 5 % [1]" in lines[0] and "within 3 % [2]" in lines[1]
    assert "[2] `benchmarks/results/dahu_validation-2020.json`: " in trust
    # the footnote is the file's provenance, though the file has no `dahu` part
    note = next(line for line in trust.splitlines() if line.startswith("[2] "))
    assert "unknown" not in note and "`?`" not in note and "benchmarks/dahu_validation-2020.py" in note


def test_no_published_footnote_lacks_its_provenance():
    for page in tables.PAGES:
        for line in page.read_text().splitlines():
            if re.match(r"\[\d+\] `benchmarks/results/", line):
                assert "unknown CPU" not in line and "unknown commit" not in line and "`?`" not in line, (page, line)


def test_the_star_table_renders_the_scaling_file(tmp_path):
    """docs/predict.md's star table: one row per point, µs per simulated message = wall /
    messages, the authors' wall over ours where the benchmark has their figure."""
    rows = [dict(n=50000, nb=128, p=4, q=4, exchanges="modelled", wall_s=[0.5, 0.7, 0.6], pss_mb=[20.0, 24.0],
                 gflops=437.5, simulated_messages=20000, panels_per_s=500.0, reference_wall_s=19.2)]
    _write(tmp_path, tables.STAR, {"rows": rows})
    text = tables.render_table("star", tables.Results(tmp_path))
    assert "| 50,000 | 4×4 | modelled | 0.60 | 24.0 | 437.5 | 20,000 | 30.0 | 500.0 | 32.00× |" in text
    assert "One run each [1]." in text and "pending" not in text
    assert tables.render_table("star", tables.Results(tmp_path / "none")).startswith("pending (")


def test_adopt_writes_a_presets_part_to_its_file(tmp_path):
    """`dahu_validation-2020/dahu-2020` names that preset's part of an N-sweep file: adopt
    writes the file (dahu_validation-2020.json), not a folder of that name."""
    src = tmp_path / "nsweep.json"
    src.write_text(json.dumps(_dahu_validation(("dahu-2020",))))
    out = tables.adopt(src, tables.DAHU_2020, "bench --json x.json", tmp_path)
    assert out == tmp_path / "dahu_validation-2020.json"
    assert tables.Results(tmp_path).get(tables.DAHU_2020) is not None

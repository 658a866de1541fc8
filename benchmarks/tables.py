#!/usr/bin/env python3
"""The README's and the docs' tables of figures, rendered from benchmarks/results/*.json.

A figure that a benchmark measured is published only through a results file: the JSON a
benchmark writes with `--json benchmarks/results/NAME.json` (benchmarks/_common.py's
writer adds the commit, date, machine and command). A table lives in a Markdown file
between ``<!-- table: NAME (benchmarks/tables.py) -->`` and ``<!-- end table -->``; this
script renders it from the results, and a test (tests/test_results_tables.py) fails when
a page's table is not what the results render. A figure whose results file does not exist
yet reads "pending (the command that produces it)", never a number typed by hand.

    .venv/bin/python benchmarks/tables.py                 # print every table
    .venv/bin/python benchmarks/tables.py --write         # rewrite the tables in the pages
    .venv/bin/python benchmarks/tables.py --check         # exit 1 if a page disagrees
    .venv/bin/python benchmarks/tables.py adopt nsweep.json dahu_validation \\
        --command ".venv/bin/python benchmarks/dahu_validation.py --jobs 2 --json nsweep.json"

`adopt` copies a JSON written without the shared writer (benchmarks/dahu_validation.py and
benchmarks/factorial.py write theirs through hplsim's own) into benchmarks/results/NAME.json
with its provenance, recorded at adoption: say the command that produced it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, Parser, provenance, run_main  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
#: the pages that hold rendered tables
PAGES = (REPO / "README.md", REPO / "docs" / "validation.md", REPO / "docs" / "predict.md")
MARK = re.compile(r"(<!-- table: (?P<name>[\w-]+) \(benchmarks/tables\.py\) -->\n)(?P<body>.*?)(<!-- end table -->)", re.S)

DAHU = "dahu_validation"
DAHU_2020 = "dahu_validation-2020/dahu-2020"  # that preset's part of its own N-sweep file
FACTORIAL = "factorial"
#: the factorial's configurations at NB = 128 (BCAST 0-5 x DEPTH 0/1 x SWAP 0/1/2)
FACTORIAL_SIZE = 36
CLOSED_LOOP = "validate_local"
STAR = "emulation_scaling-star"
DAHU_SCALING = "emulation_scaling-dahu"
#: what produces each results file (the "pending" text names it)
PRODUCERS = {
    DAHU: "benchmarks/dahu_validation.py",
    DAHU_2020: "benchmarks/dahu_validation.py --preset dahu-2020",
    FACTORIAL: "benchmarks/factorial.py --preset dahu-2020",
    CLOSED_LOOP: "benchmarks/validate_local.py --repeat 5",
    STAR: "benchmarks/emulation_scaling.py --scenario star",
    DAHU_SCALING: "benchmarks/emulation_scaling.py --scenario dahu",
}


class Results:
    """The results files of one folder, each read once; a missing one is None."""

    def __init__(self, folder: Path = RESULTS):
        self.folder = folder
        self._docs: dict[str, dict | None] = {}
        self.used: list[str] = []  # in the order the tables cite them: their footnote numbers

    def get(self, name: str) -> dict | None:
        """A results file's document; `file/preset` is that preset's part of an N-sweep file
        (benchmarks/dahu_validation.py writes both presets into one), and a bare N-sweep
        name its `dahu` part, each with the file's provenance."""
        file, _, part = name.partition("/")
        doc = self._file(file)
        if doc is None or "presets" not in doc:
            return doc if not part else None  # a file of one run set has no preset's part
        one = doc["presets"].get(part or "dahu")
        return None if one is None else {**one, "provenance": doc.get("provenance")}

    def _file(self, file: str) -> dict | None:
        if file not in self._docs:
            path = self.folder / f"{file}.json"
            self._docs[file] = json.loads(path.read_text()) if path.is_file() else None
        return self._docs[file]

    def cite(self, name: str) -> str:
        name = name.partition("/")[0]
        if name not in self.used:
            self.used.append(name)
        return f"[{self.used.index(name) + 1}]"

    def footnotes(self) -> list[str]:
        out = []
        for i, name in enumerate(self.used, 1):
            p = (self._file(name) or {}).get("provenance") or {}  # the file's, whichever part was cited
            m = p.get("machine") or {}
            ram = f", {m['ram_bytes'] / 2**30:.0f} GiB RAM" if m.get("ram_bytes") else ""
            load = m.get("load_average")
            busy = f", load average {load[0]:.1f} when written" if load else ""
            where = f"{m.get('cpu') or 'unknown CPU'}, {m.get('cores') or '?'} cores{ram}{busy}"
            commit = (p.get("commit") or "unknown commit")[:10] + (" + local changes" if p.get("modified") else "")
            out.append(f"[{i}] `benchmarks/results/{name}.json`: {where}; {commit}, {(p.get('date') or '?')[:10]}; "
                       f"`{p.get('command') or '?'}`")
        return out


def pending(name: str) -> str:
    return f"pending (`{PRODUCERS[name]}`)"


def pct(x: float | None, signed: bool = True) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.1f} %".replace("-", "−") if signed else f"{x:.1f} %"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def _nsweep(doc: dict) -> dict | None:
    """The preset's own variant's summary (the stochastic one, what `predict --preset` runs)."""
    s = doc.get("summary") or {}
    return s.get("stochastic") or next(iter(s.values()), None)


def _one_configuration(res: Results, name: str) -> str:
    doc = res.get(name)
    s = doc and _nsweep(doc)
    if not s:
        return pending(name)
    within, bound = s.get("within", s["within_5pct"]), s.get("within_pct", 5)
    return (f"mean \\|error\\| {pct(s['mean_abs_error_pct'], False)}, largest {pct(s['errors_pct'][str(s['worst_n'])])} "
            f"(N = {s['worst_n']:,}); {within} of {len(s['n'])} sizes within {bound:g} % {res.cite(name)}")


def _trend(res: Results, name: str) -> str:
    doc = res.get(name)
    s = doc and _nsweep(doc)
    if not s:
        return pending(name)
    errors = {int(n): e for n, e in s["errors_pct"].items()}
    return ", ".join(f"{pct(e)} at {n:,}" for n, e in sorted(errors.items())) + f" {res.cite(name)}"


def _factorial(res: Results) -> str:
    doc = res.get(FACTORIAL)
    ours = doc and (doc.get("summary") or {}).get("hplsim")
    if not ours:
        return pending(FACTORIAL)
    theirs = doc["summary"].get("authors") or {}

    def say(s: dict) -> str:
        rho = f", Spearman {s['spearman']:.2f}" if s.get("spearman") is not None else ""
        return (f"{s['within_5pct']} of {s['configurations']} within 5 % relative, worst "
                f"{pct(100 * s['worst_relative_error'])} ({s['worst']}){rho}")

    # a factorial still being run says so: its figures are over the configurations run so far
    part = "" if ours["configurations"] >= FACTORIAL_SIZE else \
        f"so far ({ours['configurations']} of its {FACTORIAL_SIZE} configurations run): "
    return f"{part}{say(ours)} (the authors' emulation: {say(theirs)}) {res.cite(FACTORIAL)}"


def _closed_loop_by(res: Results, key: Callable[[dict], str], what: str) -> str:
    doc = res.get(CLOSED_LOOP)
    if not doc:
        return pending(CLOSED_LOOP)
    groups: dict[str, list[float]] = {}
    for r in doc["rows"]:
        if r["n"] >= doc["target"]["min_n"]:
            groups.setdefault(key(r), []).append(r["error_pct"])
    return "; ".join(f"{what} {k}: mean {pct(statistics.fmean(v))}, largest \\|error\\| {pct(max(map(abs, v)), False)}"
                     for k, v in groups.items()) + f" {res.cite(CLOSED_LOOP)}"


def _closed_loop(res: Results) -> str:
    doc = res.get(CLOSED_LOOP)
    if not doc:
        return pending(CLOSED_LOOP)
    s = doc[f"summary_n_ge_{doc['target']['min_n']}"]
    return (f"median \\|error\\| {pct(s['median_abs_error_pct'], False)}, largest {pct(s['max_abs_error_pct'], False)} "
            f"({s['configurations']} configurations, N ≥ {doc['target']['min_n']:,}; real runs spread "
            f"{pct(s['median_spread_pct'], False)} (median)) {res.cite(CLOSED_LOOP)}")


def this_machine(res: Results, name: str) -> str:
    m = ((res.get(name) or {}).get("provenance") or {}).get("machine") or {}
    return f"this machine ({m['cpu']}, {m['cores']} cores)" if m.get("cpu") else "this machine"


def trust(res: Results) -> list[str]:
    """How far to trust it: one row per question, the error measured, the machine state."""
    dahu, jan = "Dahu 2019-03 (`--preset dahu`)", "Dahu January 2020 (`--preset dahu-2020`)"
    # the 2020 sweep's own file (a run of that preset alone), else its part of a run of both
    sweep_2020 = DAHU_2020 if res.get(DAHU_2020) or not res.get(f"{DAHU}/dahu-2020") else f"{DAHU}/dahu-2020"
    rows = [
        ["Gflops of one configuration (1,024 ranks)", _one_configuration(res, DAHU), dahu,
         "`docs/validation.md` E91, E92, E94"],
        ["Gflops of one configuration (1,024 ranks)", _one_configuration(res, sweep_2020), jan + ", its 'good' N-sweep",
         "`docs/presets.md`, `docs/validation.md` E58, E94"],
        ["The trend in N", _trend(res, DAHU), dahu, "`docs/validation.md` E38, E92, E94"],
        ["The trend in N", _trend(res, sweep_2020), jan + ", its 'good' N-sweep", "`docs/validation.md` E58, E92, E94"],
        ["Ranking BCAST / DEPTH / SWAP (the factorial's 36 configurations, N = 250,000)", _factorial(res), jan,
         "`docs/validation.md` E57, E62, E64–E68, E91, E94–E96, E99, E100"],
        ["NB", "not measured on Dahu (the factorial's NB = 256 half is held back for an outside check)", jan,
         "`docs/presets.md`"],
        ["NB", _closed_loop_by(res, lambda r: str(r["nb"]), "NB"), this_machine(res, CLOSED_LOOP),
         "`docs/validate.md`"],
        ["The grid P×Q", _closed_loop_by(res, lambda r: f"{r['p']}×{r['q']}", "grid"), this_machine(res, CLOSED_LOOP),
         "`docs/validate.md`"],
        ["This machine's closed loop (calibrate → fit → predict → run HPL)", _closed_loop(res),
         this_machine(res, CLOSED_LOOP), "`docs/validate.md`"],
    ]
    return table(["Question", "Measured error", "Machine state", "Behind it"], rows)


def _wall(s: float) -> str:
    if s < 120:
        return f"{s:,.1f} s"
    return f"{s / 60:,.1f} min" if s < 600 else f"{s / 60:,.0f} min"


def cost(res: Results) -> list[str]:
    """What a prediction costs: simulation wall time and memory by ranks and N."""
    rows = []
    star = res.get(STAR)
    if star:
        for r in sorted((r for r in star["rows"] if r["exchanges"] == "modelled"), key=lambda r: (r["p"] * r["q"], r["n"])):
            rows.append([f"{r['p'] * r['q']:,} ({r['p']}×{r['q']})", f"{r['n']:,}", "one-switch star",
                         _wall(statistics.median(r["wall_s"])), f"{max(r['pss_mb']):,.0f} MB", res.cite(STAR)])
    else:
        rows.append(["16 … 1,024", "20,000, 50,000", "one-switch star", pending(STAR), "", ""])
    # the Dahu preset's cost: its scaling run (alone on the machine) when there is one, else
    # the N-sweep's runs (two at a time: upper bounds)
    scaling, dahu = res.get(DAHU_SCALING), res.get(DAHU)
    if scaling:
        for r in sorted((r for r in scaling["rows"] if r["exchanges"] == "modelled"), key=lambda r: r["n"]):
            rows.append([f"{r['p'] * r['q']:,} ({r['p']}×{r['q']})", f"{r['n']:,}", "Dahu preset",
                         _wall(statistics.median(r["wall_s"])), f"{max(r['pss_mb']):,.0f} MB", res.cite(DAHU_SCALING)])
    elif dahu:
        for r in sorted((r for r in dahu["rows"] if r["variant"] == "stochastic"), key=lambda r: r["n"]):
            rows.append(["1,024 (32×32)", f"{r['n']:,}", "Dahu preset", _wall(r["sim_wall_s"]),
                         f"{r['sim_memory_bytes'] / 1e6:,.0f} MB", res.cite(DAHU)])
    else:
        rows.append(["1,024 (32×32)", "50,000 … 500,000", "Dahu preset", pending(DAHU), "", ""])
    return table(["Ranks", "N", "Platform", "Simulation wall", "Memory (PSS)", "Run"], rows)


def star(res: Results) -> list[str]:
    """The star scenario point by point (docs/predict.md, Cost of a simulation): wall, PSS,
    the messages still simulated, the wall per message, and the authors' wall over ours."""
    return scaling(res, STAR)


def dahu_scaling(res: Results) -> list[str]:
    """The Dahu preset's scaling run, as the star scenario's (docs/predict.md)."""
    return scaling(res, DAHU_SCALING)


def scaling(res: Results, name: str) -> list[str]:
    doc = res.get(name)
    if not doc:
        return [pending(name)]
    rows = []
    for r in sorted(doc["rows"], key=lambda r: (r["p"] * r["q"], r["n"])):
        wall = statistics.median(r["wall_s"])
        ref = f"{r['reference_wall_s'] / wall:.2f}×" if r.get("reference_wall_s") else ""
        rows.append([f"{r['n']:,}", f"{r['p']}×{r['q']}", r["exchanges"], f"{wall:,.2f}", f"{max(r['pss_mb']):,.1f}",
                     f"{r['gflops']:,.1f}", f"{r['simulated_messages']:,}",
                     f"{1e6 * wall / r['simulated_messages']:.1f}", f"{r['panels_per_s']:,.1f}", ref])
    return table(["N", "grid", "exchanges", "wall s", "PSS MB", "Gflops", "messages", "µs/msg", "panels/s",
                  "the authors' wall / ours"], rows) + ["", f"One run each {res.cite(name)}."]


TABLES: dict[str, Callable[[Results], list[str]]] = {"trust": trust, "cost": cost, "star": star,
                                                    "dahu-scaling": dahu_scaling}


def render_table(name: str, res: Results) -> str:
    """One table and the footnotes of the results files it cites."""
    res.used.clear()
    lines = TABLES[name](res)
    notes = res.footnotes()
    return "\n".join(lines) + "\n" + ("\n" + "<br>\n".join(notes) + "\n" if notes else "")


def render_page(text: str, res: Results) -> str:
    def one(m: re.Match) -> str:
        if m.group("name") not in TABLES:
            raise KeyError(f"no table named {m.group('name')!r} in benchmarks/tables.py")
        return m.group(1) + render_table(m.group("name"), res) + m.group(4)

    return MARK.sub(one, text)


def disagreements(pages=PAGES, folder: Path = RESULTS) -> list[str]:
    """The tables of `pages` that differ from what the results render."""
    res = Results(folder)
    out = []
    for page in pages:
        text = page.read_text()
        fresh = render_page(text, res)
        for old, new in zip(MARK.finditer(text), MARK.finditer(fresh)):
            if old.group("body") != new.group("body"):
                where = page.relative_to(REPO) if page.is_relative_to(REPO) else page.name
                out.append(f"{where}: table '{old.group('name')}'")
    return out


def adopt(source: Path, name: str, command: str, folder: Path = RESULTS) -> Path:
    from hplsim.errors import HplsimError
    from hplsim.outputs import write_json

    try:
        doc = json.loads(source.read_text())
    except (OSError, ValueError) as exc:
        raise HplsimError(f"adopt {source}: not a readable JSON file ({exc})") from None
    if isinstance(doc, list):
        doc = {"rows": doc}
    p = doc.pop("provenance", None)
    if isinstance(p, dict) and {"commit", "date", "machine"} <= p.keys():
        # written by the shared writer (a benchmark run to a scratch path): its commit, date
        # and machine are the run's own; only the command is restated with the published path
        p.update(command=command, adopted_from=str(source))
    else:
        p = provenance()
        p.update(command=command, adopted_from=str(source),
                 note="commit, date and machine recorded when the file was adopted, not when it was produced")
    # `file/preset` names a preset's part of an N-sweep file: the file is what is written
    return write_json(folder / f"{name.partition('/')[0]}.json", {"provenance": p, **doc}, "the adopted results")


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="benchmarks/tables.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite the tables in " + ", ".join(
        str(p.relative_to(REPO)) for p in PAGES))
    ap.add_argument("--check", action="store_true", help="exit 1 if a page's table is not what the results render")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the results folder (default: %(default)s)")
    sub = ap.add_subparsers(dest="action")
    ad = sub.add_parser("adopt", help="copy a JSON into benchmarks/results/NAME.json with its provenance")
    ad.add_argument("source", type=Path)
    ad.add_argument("name", choices=sorted(PRODUCERS))
    ad.add_argument("--command", required=True, help="the command that produced SOURCE")
    args = ap.parse_args(argv)

    if args.action == "adopt":
        print(adopt(args.source, args.name, args.command, args.results))
        return 0
    if args.check:
        bad = disagreements(folder=args.results)
        for line in bad:
            print(f"{line} disagrees with {args.results} (run benchmarks/tables.py --write)", file=sys.stderr)
        return 1 if bad else 0
    res = Results(args.results)
    if args.write:
        for page in PAGES:
            text = page.read_text()
            fresh = render_page(text, res)
            if fresh != text:
                page.write_text(fresh)
                print(f"rewrote {page.relative_to(REPO)}")
        return 0
    for name in TABLES:
        print(f"<!-- table: {name} (benchmarks/tables.py) -->\n{render_table(name, res)}<!-- end table -->\n")
    return 0


if __name__ == "__main__":
    run_main(main)

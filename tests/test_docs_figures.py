"""One source for every published figure (issue 57): a measured figure that a user doc
shows is rendered from `benchmarks/results/*.json` by `benchmarks/tables.py` (between
``<!-- table: NAME (benchmarks/tables.py) -->`` and ``<!-- end table -->``), or it lives
only in the lab notebook, whose dated entries are the record; the user doc points at the
entry instead of typing the figures again. A figure typed into a user doc is tied to no
run and ages silently. The notebook has two parts: `docs/validation.md`, its entries E0,
E1, … ("docs/validation.md E21"), and `docs/validation-records.md`, the records first
written into the user pages and moved there on 2026-12-05, R1, R2, …
("docs/validation-records.md R7"). A record that a page cites exists, and every record is
cited by some page: a record no page points at is a figure nobody reads.

Scanned: docs/*.md except the notebook's two parts, outside fenced code blocks (examples,
and command output that the docs' tests run), rendered table blocks and HTML comments. A
line is an offender when it holds what this test recognises as a measured figure:

- a rate: a number followed by Gflops, Tflops or Gflop/s ("29,105 Gflops");
- a signed percentage, an error or a change: "+1.2 %", "−3.4 %", "-3.4%", "±5 %";
- a speed or cost ratio: "3× faster", "1.42× longer", "0.71× the authors'", "2.6× what",
  "×35" (an extrapolation factor), "2.2-2.4x", "3.6 times that"; a grid or a shape
  (32×32, 8 × 128, NB×NB, 1800 × 3600 × 64, M·N·K) is not one, nor a threshold written
  "1.5× or more";
- memory of a run: kB, MB or GB with two digits or a decimal ("525 MB") in a paragraph or
  table that speaks of PSS, RSS or page tables; a single-digit whole amount (2 MiB pages,
  a 1 GB target) is a size or a limit;
- wall time of a run: a duration (s, ms, min, h) on a line that says the run took, spent
  or ran it, or calls it wall or CPU time ("N = 500,000 took 4,283 s");
- a table of measurements: a table whose header names a measured quantity (Gflops, error,
  wall, PSS, spread, coverage, or a unit column such as "(s)" or "(MB)") and whose body
  has a number beyond its first column.

Bandwidths (GB/s, Gbit/s) are not recognised: the docs give them as hardware facts (a
link's rate in a platform file, a published calibration) far more often than as our
measurements, which come with a rate or a signed error that the rules above catch.
Unsigned percentages are not recognised either: they are mostly targets, thresholds and
shares. These rules are a net, not the definition: a figure they miss is still a
measurement if a run on some day produced it.

The escape, for a figure that is a sourced fact and not ours (hardware, a TOP500 entry, a
paper's figure, the published reference data's own values): the line ends with
``<!-- sourced: WHERE IT COMES FROM -->``. It is never for our own runs, fits or
simulations, whatever their age: those go to the notebook.

PENDING lists the passages whose measured figures no notebook entry holds yet. Each is
named by a unique piece of its text and covers that line's block (consecutive non-blank
lines: a paragraph, a list, a table) or, when the piece is a heading, its section and
subsections. The list only shrinks: an entry whose passage is gone, or holds no offender
any more, fails until it is removed. It is empty since the 23 passages it held moved into
docs/validation-records.md (R1–R18); it stays for a passage found later that cannot move
at once, and its mechanism is tested on a page of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO

DOCS = REPO / "docs"
NOTEBOOK = DOCS / "validation.md"
RECORDS = DOCS / "validation-records.md"  # the notebook's second part

NUM = r"\d[\d,]*(?:\.\d+)?"
RATE = re.compile(rf"{NUM}\s*(?:[GT]flops|GFLOPS|[GT]flop/s)")
SIGNED = re.compile(rf"(?<![\w.,/·×)])(?:[+−±]\s?|-){NUM}\s*%")  # "- 89 %" is a list item
# grids and shapes are blanked first, so that a "×" left over is a factor; a side of a
# shape is a number (with its noun: "40 rows × 5"), a dimension's name (N, NB, DEPTH, m)
# or a parenthesis, so that "3× faster" is no shape
_SIDE = rf"(?:{NUM}(?:\s[a-z]+)?|\b[A-Z]\w*|\b[a-z]\b|\([^()]*\))"
SHAPE = re.compile(rf"{_SIDE}(?:\s*[×x·]\s*{_SIDE})+|^\s*×|×\s*$")  # a shape may wrap: "NB 64 ×" ends a line
COMPARED = (r"(?:faster|slower|longer|shorter|cheaper|dearer|larger|smaller|more|less|what|that|as|their"
            r"|the authors)\b")
FACTOR = re.compile(rf"{NUM}\s?×\s?{COMPARED}|×{NUM}|\b{NUM}x\b|\b{NUM}\s+times\s+{COMPARED}")
# a single-digit whole amount (2 MiB pages, a 1 GB target) is a size or a limit
BYTES = re.compile(rf"(?:\d[\d,]*\.\d+|\d[\d,]+)\s*(?:[kKMG]i?B)\b(?!/s)")
MEMORY_CONTEXT = re.compile(r"\b(?:PSS|RSS|page tables?|VmPTE)\b")
DURATION = re.compile(rf"{NUM}\s?(?:s|ms|min|h)\b")
WALL_CONTEXT = re.compile(r"\b(?:wall|took|takes|taking|spent|ran|runs? in|finished in|of CPU|CPU time|"
                          r"of simulation)\b")
MEASURED_HEADER = re.compile(r"\b(?:[GT]flops|errors?|wall|PSS|spread|coverage)\b|\((?:s|ms|µs|MB|GB)\)", re.I)
SOURCED = re.compile(r"<!-- sourced: \S[^>]*-->\s*$")
COMMENT = re.compile(r"<!--.*?-->", re.S)

#: (page, a unique piece of the passage): figures still waiting for their notebook entry
PENDING: list[tuple[str, str]] = []


@dataclass(frozen=True)
class Line:
    page: str
    number: int
    text: str
    block: int  # consecutive prose lines share one
    sections: tuple[str, ...]  # the headings above, outermost first


def lines(page: Path) -> list[Line]:
    """The page's prose, line numbers kept: fenced blocks and rendered tables left out."""
    out, fence, rendered, block, sections = [], None, False, 0, ()
    for number, raw in enumerate(page.read_text().splitlines(), 1):
        stripped = raw.strip()
        if fence:
            fence = None if stripped.startswith(fence) else fence
            block += 1
            continue
        if m := re.match(r"(```+|~~~+)", stripped):
            fence, block = m.group(1), block + 1
            continue
        if stripped.startswith("<!-- table: "):
            rendered = True
        if rendered:
            rendered = not stripped.startswith("<!-- end table")
            block += 1
            continue
        if not stripped:
            block += 1
            continue
        if m := re.match(r"(#+) ", raw):
            level = len(m.group(1))
            sections = tuple(h for h in sections if len(h) - len(h.lstrip("#")) < level) + (stripped,)
            block += 1
        out.append(Line(page.name, number, raw, block, sections))
    return out


def offence(line: Line, block_text: str, measured_row: bool) -> str | None:
    """What measured figure the line holds, or None."""
    if SOURCED.search(line.text):
        return None
    text = re.sub(r"`[^`]*`", "", COMMENT.sub("", line.text))  # code: `--memory-per-node 192GB`
    if m := RATE.search(text):
        return f"a rate, {m.group()!r}"
    if m := SIGNED.search(text):
        return f"a signed percentage, {m.group()!r}"
    if m := FACTOR.search(SHAPE.sub(" ", text)):
        return f"a ratio, {m.group()!r}"
    if MEMORY_CONTEXT.search(block_text) and (m := BYTES.search(text)):
        return f"memory of a run, {m.group()!r}"
    if WALL_CONTEXT.search(text) and (m := DURATION.search(text)):
        return f"a wall time, {m.group()!r}"
    if measured_row:
        return "a row of a table of measurements"
    return None


def offenders(page: Path) -> list[tuple[Line, str]]:
    blocks: dict[int, list[Line]] = {}
    for line in lines(page):
        blocks.setdefault(line.block, []).append(line)
    found = []
    for block in blocks.values():
        text = "\n".join(COMMENT.sub("", line.text) for line in block)
        rows = [line for line in block if line.text.lstrip().startswith("|")]
        measured = bool(rows) and MEASURED_HEADER.search(rows[0].text) is not None
        for line in block:
            cells = line.text.strip().strip("|").split("|")
            row = measured and line in rows[2:] and any(re.search(r"\d", c) for c in cells[1:])
            if why := offence(line, text, row):
                found.append((line, why))
    return found


def pending_scope(page: Path, piece: str) -> list[Line]:
    """The lines a PENDING entry covers: its heading's section, or its piece's block."""
    prose = lines(page)
    holders = [line for line in prose if piece in line.text]
    assert len(holders) == 1, f"PENDING {page.name}: {piece!r} names {len(holders)} passages, not one"
    holder = holders[0]
    if piece.lstrip().startswith("#"):
        return [line for line in prose if holder.text.strip() in line.sections]
    return [line for line in prose if line.block == holder.block]


def pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if p not in (NOTEBOOK, RECORDS))


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_a_user_doc_types_no_measured_figure(page):
    pending = {line for name, piece in PENDING if name == page.name for line in pending_scope(page, piece)}
    bad = [f"{page.name}:{line.number}: {why}: {line.text.strip()[:100]}"
           for line, why in offenders(page) if line not in pending]
    assert not bad, ("measured figures typed into a user doc: render them from benchmarks/results/ "
                     "(benchmarks/tables.py), or move them into the lab notebook (docs/validation.md, "
                     "docs/validation-records.md) and point at the entry\n" + "\n".join(bad))


def test_a_pending_passage_still_holds_figures():
    """The list only shrinks: a passage moved into the notebook leaves it. One test over the
    list, not one per entry, so that an empty list is a pass and not a skip."""
    gone = [f"{name}: {piece!r}" for name, piece in PENDING
            if not any(line in set(pending_scope(DOCS / name, piece)) for line, _ in offenders(DOCS / name))]
    assert not gone, "holds no measured figure any more, remove it from PENDING:\n" + "\n".join(gone)


def test_a_pending_entry_covers_its_block_or_its_section(tmp_path):
    """PENDING's mechanism, on a page of its own: a piece of a paragraph covers the paragraph,
    a heading its section and subsections, and a piece must name one passage."""
    page = tmp_path / "page.md"
    page.write_text("""# A page

Intro: 29,105 Gflops.
Same paragraph.

Another paragraph, 3× faster.

## Runs (lab record)

| N | wall (s) |
|---|---|
| 20,480 | 2,208 |

### A run

It took 4,283 s of wall.

## After
N = 500,000 took 4,283 s.
""")
    assert [line.number for line in pending_scope(page, "Same paragraph")] == [3, 4]
    assert [line.number for line in pending_scope(page, "## Runs (lab record)")] == [8, 10, 11, 12, 14, 16]
    covered = {line for line in pending_scope(page, "## Runs (lab record)")}
    assert [line.number for line, _ in offenders(page) if line not in covered] == [3, 6, 19]
    with pytest.raises(AssertionError, match="names 0 passages"):
        pending_scope(page, "no such text")


#: a citation of a record: "docs/validation-records.md R7", "… R13 and R14", "… R2–R4"
CITATION = re.compile(r"validation-records\.md,?\s+(R\d+(?:(?:,\s*|\s+and\s+|–)R\d+)*)")
RECORD = re.compile(r"^## R(\d+) — ", re.M)


def cited(text: str) -> set[int]:
    """The record numbers a page's text cites."""
    numbers = set()
    for m in CITATION.finditer(text):
        for first, last in re.findall(r"R(\d+)(?:–R(\d+))?", m.group(1)):
            numbers.update(range(int(first), int(last or first) + 1))
    return numbers


def citations() -> dict[str, set[int]]:
    """Every page of docs/ (the notebook's first part included, the records themselves left
    out) and the README, with the records it cites."""
    found = {str(p.relative_to(REPO)): cited(p.read_text()) for p in sorted(DOCS.rglob("*.md")) if p != RECORDS}
    found["README.md"] = cited((REPO / "README.md").read_text())
    return {page: numbers for page, numbers in found.items() if numbers}


def test_the_records_are_numbered_in_order():
    numbers = [int(n) for n in RECORD.findall(RECORDS.read_text())]
    assert numbers == list(range(1, len(numbers) + 1)), numbers


def test_a_cited_record_exists():
    records = {int(n) for n in RECORD.findall(RECORDS.read_text())}
    missing = [f"{page}: R{n}" for page, numbers in citations().items() for n in sorted(numbers - records)]
    assert not missing, "cites a record docs/validation-records.md does not have:\n" + "\n".join(missing)


def test_every_record_is_cited():
    """No orphan: each record is pointed at by the page it came from, or by the notebook."""
    records = {int(n) for n in RECORD.findall(RECORDS.read_text())}
    pointed = set().union(*citations().values())
    assert records - pointed == set(), f"records no page cites: {sorted(records - pointed)}"


def test_a_citation_is_read_in_each_form():
    assert cited("see docs/validation-records.md R7, and docs/validation-records.md\nR5, T1") == {5, 7}
    assert cited("validation-records.md R13 and R14; validation-records.md R2–R4, R9") == {2, 3, 4, 9, 13, 14}
    assert cited("docs/validation-records.md for the records; validation.md R2") == set()


def test_the_rule_catches_what_it_is_for():
    """Each rule on a figure of the kind it is for, and not on its look-alikes."""
    def caught(text: str, context: str = "") -> bool:
        line = Line("x.md", 1, text, 0, ())
        return offence(line, context or text, False) is not None

    for measured in ("extrapolated to 29,105 Gflops", "the error is −3.4 %", "+1.2 % at N = 50,000",
                     "2.2× faster than with messages", "0.71× the authors'", "extrapolated ×35",
                     "2.2-2.4x the wall", "3.6 times that", "N = 500,000 took 4,283 s",
                     "with 525 MB of PSS"):
        assert caught(measured), measured
    for fact in ("a 32×32 grid, 8 × 128 and 1800 × 3600 × 64", "N×(N+1) doubles", "a jump of 1.5× or more",
                 "over 16 times the winner's cost", "NB 64/128/256 ×",
                 "`--memory-per-node 192GB`", "2 MiB huge pages", "within 5 % (the target)", "12.5 GB/s links",
                 "- 89 % of the calls", "Stampede: **5,168 Tflops** <!-- sourced: TOP500, June 2013 -->"):
        assert not caught(fact, fact + " PSS"), fact


def test_a_page_is_read_as_prose_tables_and_code(tmp_path):
    """Tables of measurements are caught by their header; code blocks, rendered tables and
    sourced lines are not scanned."""
    page = tmp_path / "page.md"
    page.write_text("""# A page

| N | wall (s) | Gflops |
|---|---|---|
| 20,480 | 2,208 | 1,471 |

| figure | value | source |
|---|---|---|
| link latency | 5.2 µs | the platform file |

```text
N = 50,000: 14,181 Gflops (+10.8 %)
```

<!-- table: trust (benchmarks/tables.py) -->
| Question | Measured error |
|---|---|
| Gflops | +1.3 % at 50,000 |
<!-- end table -->

Stampede: **5,168 Tflops** <!-- sourced: TOP500, June 2013 -->
""")
    found = [(line.number, why) for line, why in offenders(page)]
    assert found == [(5, "a row of a table of measurements")]


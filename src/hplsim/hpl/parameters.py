"""HPL's parameters, declared once: the one table every other copy is derived from.

Each row says what the parameter is called (`HplConfig`'s field, the sweep spec's field,
the results store's and the real runs' archive column), how HPL.dat holds it (its line, a
list or one value, its comment), its command-line option, its type, range or named codes,
default and help. From it come `HplConfig`'s defaults and range checks, `HplParams`'s
lists, the HPL.dat reader and writer, the options of predict/run-real/validate/tune, the
sweep spec's ``hpl:`` fields, the results store's columns and the docs' table
(``python -m hplsim.hpl.parameters docs/sweep.md`` rewrites it; `tests/test_parameters.py`
fails when it is stale).

Codes are HPL's own and defaults those of the HPL.dat shipped with hpcc's HPL
(``_hpccinf.txt``), except NB which hpcc sizes from memory.

Examples
--------
>>> from hplsim.hpl.parameters import PARAMETER
>>> bcast = PARAMETER["bcast"]
>>> bcast.line, bcast.listed, bcast.default, bcast.codes_text()
(23, True, 1, '0 1ring, 1 1ringM, 2 2ring, 3 2ringM, 4 long, 5 longM')
>>> bcast.check(7)
Traceback (most recent call last):
hplsim.errors.HplsimError: BCAST must be in [0, 5], got 7
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from hplsim.errors import HplsimError

_FACT = {0: "left", 1: "crout", 2: "right"}


@dataclass(frozen=True)
class Parameter:
    name: str  # HplConfig's field, the sweep spec's field, the store's and the archive's column
    label: str  # as HPL and the messages name it
    type: type  # int or bool
    default: int | bool | None  # None: no default (N must be given)
    line: int  # HPL.dat's line of the value(s) (HPL reads HPL.dat by line number)
    comment: str  # HPL.dat's comment on that line, as HPL's own HPL.dat writes it
    help: str  # one phrase: the option's help and the docs' meaning
    option: str | None = None  # the command-line spelling; None: not an option
    minimum: int | None = None
    maximum: int | None = None
    codes: Mapping[int, str] = field(default_factory=dict)  # named codes (HPL's names)
    # HPL.dat gives a list of values: the depth of its loop in HPL's driver (0 outermost);
    # None: one value for every run
    loop: int | None = None
    # a list's count line, the one before its values: (HPL.dat's comment, what it counts);
    # None on a list that shares the count of the line before (Qs with Ps)
    count: tuple[str, str] | None = None
    true_code: int = 1  # a flag's code in HPL.dat for True (L1 and U: 0 is transposed)
    params_field: str = ""  # `HplParams`'s field when it is not `name` (one value) or `name`+s (list)

    @property
    def listed(self) -> bool:
        return self.loop is not None

    @property
    def list_field(self) -> str:
        """`HplParams`'s field holding this parameter."""
        return self.params_field or (self.name + "s" if self.listed else self.name)

    @property
    def bounds(self) -> tuple[int | None, int | None]:
        if self.codes:
            return min(self.codes), max(self.codes)
        return self.minimum, self.maximum

    def spellings(self) -> tuple[str, ...]:
        """The command-line spelling(s); a flag has two, ``--x`` and ``--no-x``."""
        if self.option is None:
            return ()
        if self.type is bool:
            return self.option, "--no-" + self.option.lstrip("-")
        return (self.option,)

    def codes_text(self) -> str:
        return ", ".join(f"{code} {name}" for code, name in self.codes.items())

    def range_text(self) -> str:
        """The legal values, for the docs: ``>= 1``, ``0 left, 1 crout, 2 right``, ``true/false``."""
        if self.type is bool:
            return "true/false"
        if self.codes:
            return self.codes_text()
        lo, hi = self.bounds
        return f">= {lo}" if hi is None else f"{lo} .. {hi}"

    def check(self, value: object) -> None:
        """Refuse what HPL would: a wrong type or a value out of range."""
        if self.type is bool:
            if not isinstance(value, bool):
                raise HplsimError(f"{self.label} must be true or false, got {value!r}")
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise HplsimError(f"{self.label} must be an integer, got {value!r}")
        lo, hi = self.bounds
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise HplsimError(f"{self.label} must be {bound}, got {value}")


#: in `HplConfig`'s field order, which is also the order of the results store's and the
#: archive's columns (so it must not change: existing files have their columns in it)
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("n", "N", int, None, 6, "Ns", "Problem size(s) N, e.g. 20000 or 10000,20000",
              option="-N", minimum=1, loop=1, count=("# of problems sizes (N)", "problem sizes")),
    Parameter("nb", "NB", int, 128, 8, "NBs", "Block size(s) NB",
              option="--nb", minimum=1, loop=2, count=("# of NBs", "NBs")),
    Parameter("p", "P", int, 1, 11, "Ps", "Process rows (paired with -Q like HPL.dat's Ps/Qs)",
              option="-P", minimum=1, loop=0, count=("# of process grids (P x Q)", "process grids"),
              params_field="grids"),
    Parameter("q", "Q", int, 1, 12, "Qs", "Process columns",
              option="-Q", minimum=1, loop=0, params_field="grids"),
    Parameter("pmap", "PMAP", int, 0, 9, "PMAP process mapping (0=Row-,1=Column-major)", "Process mapping",
              option="--pmap", codes={0: "row-major", 1: "column-major"}),
    Parameter("pfact", "PFACT", int, 2, 15, "PFACTs (0=left, 1=Crout, 2=Right)", "Panel factorization(s)",
              option="--pfact", codes=_FACT, loop=6, count=("# of panel fact", "panel facts")),
    Parameter("nbmin", "NBMIN", int, 4, 17, "NBMINs (>= 1)", "Recursion stopping size(s) NBMIN",
              option="--nbmin", minimum=1, loop=7,
              count=("# of recursive stopping criterium", "recursive stopping criteria")),
    Parameter("ndiv", "NDIV", int, 2, 19, "NDIVs", "Panels in recursion NDIV",
              option="--ndiv", minimum=2, loop=8, count=("# of panels in recursion", "panels in recursion")),
    Parameter("rfact", "RFACT", int, 1, 21, "RFACTs (0=left, 1=Crout, 2=Right)", "Recursive factorization(s)",
              option="--rfact", codes=_FACT, loop=5, count=("# of recursive panel fact.", "recursive panel facts")),
    Parameter("bcast", "BCAST", int, 1, 23, "BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)", "Broadcast(s)",
              option="--bcast", codes={0: "1ring", 1: "1ringM", 2: "2ring", 3: "2ringM", 4: "long", 5: "longM"},
              loop=4, count=("# of broadcast", "broadcasts")),
    Parameter("depth", "DEPTH", int, 1, 25, "DEPTHs (>=0)", "Look-ahead depth(s)",
              option="--depth", minimum=0, loop=3, count=("# of lookahead depth", "lookahead depths")),
    Parameter("swap", "SWAP", int, 2, 26, "SWAP (0=bin-exch,1=long,2=mix)", "Swap",
              option="--swap", codes={0: "binary-exchange", 1: "spread-roll", 2: "mix"}),
    Parameter("swap_threshold", "swapping threshold", int, 64, 27, "swapping threshold",
              "Column threshold of the mixed swap", option="--swap-threshold", minimum=0),
    Parameter("l1_transposed", "L1 form", bool, True, 28, "L1 in (0=transposed,1=no-transposed) form",
              "L1 (the panel's lower triangle) stored transposed", true_code=0),
    Parameter("u_transposed", "U form", bool, True, 29, "U  in (0=transposed,1=no-transposed) form",
              "U (the row panel) stored transposed", true_code=0),
    Parameter("equil", "EQUIL", bool, True, 30, "Equilibration (0=no,1=yes)",
              "Equilibration in the spread-roll (long) swap", option="--equil"),
    Parameter("align", "ALIGN", int, 8, 31, "memory alignment in double (> 0)", "Memory alignment in doubles",
              minimum=1),
)
PARAMETER: dict[str, Parameter] = {p.name: p for p in PARAMETERS}

#: the lists of HPL.dat in the order HPL's driver nests its loops (the grid outermost)
LOOP_ORDER: tuple[Parameter, ...] = tuple(sorted((p for p in PARAMETERS if p.listed), key=lambda p: p.loop or 0))
#: the parameters that take one value per HPL.dat, in table order
SINGLE: tuple[Parameter, ...] = tuple(p for p in PARAMETERS if not p.listed)
MAX_PARAM = 20  # HPL_MAX_PARAM: HPL.dat accepts at most 20 values per list


def defaults() -> dict[str, int | bool]:
    """Every parameter's default (N has none)."""
    return {p.name: p.default for p in PARAMETERS if p.default is not None}


# ------------------------------------------------------------------------------ docs

DOCS_BEGIN = "<!-- HPL parameters: generated from src/hplsim/hpl/parameters.py -->"
DOCS_END = "<!-- end of the generated table -->"


def markdown_table() -> str:
    """The docs' table of the parameters (docs/sweep.md), one row each."""
    rows = ["| name | HPL.dat line | values per run | option | values | default | meaning |",
            "|---|---|---|---|---|---|---|"]
    for p in PARAMETERS:
        option = ", ".join(f"`{s}`" for s in p.spellings()) or "—"
        default = "—" if p.default is None else str(p.default).lower()
        per_run = f"list (`{p.list_field}`)" if p.listed else "one"
        rows.append(f"| `{p.name}` | {p.line} ({p.label}) | {per_run} | {option} | {p.range_text()} | "
                    f"{default} | {p.help} |")
    return "\n".join(rows)


def docs_block() -> str:
    return f"{DOCS_BEGIN}\n{markdown_table()}\n{DOCS_END}"


def update_docs(path: Path) -> bool:
    """Rewrite the generated table between the markers of `path`; True if it changed."""
    text = path.read_text()
    pattern = re.compile(re.escape(DOCS_BEGIN) + ".*?" + re.escape(DOCS_END), re.S)
    if not pattern.search(text):
        raise HplsimError(f"{path} has no generated table of HPL parameters (marker {DOCS_BEGIN!r})")
    new = pattern.sub(lambda _: docs_block(), text)
    if new != text:
        path.write_text(new)
    return new != text


if __name__ == "__main__":  # python -m hplsim.hpl.parameters docs/sweep.md
    for arg in sys.argv[1:]:
        print(f"{arg}: {'updated' if update_docs(Path(arg)) else 'up to date'}")

"""HPL.dat: the one reader and the one writer.

The reader is stricter than HPL's own (which silently maps unknown codes to defaults):
every line is checked and the first problem is reported with its line number.
"""

from __future__ import annotations

from pathlib import Path

from hplsim.errors import HplsimError
from hplsim.formats import read_text
from hplsim.hpl.config import HplParams
from hplsim.hpl.parameters import MAX_PARAM, PARAMETERS, Parameter

_HEADER = ("HPLinpack benchmark input file", "Innovative Computing Laboratory, University of Tennessee")
_THRESHOLD_LINE = 13  # the residual check's threshold: HPL.dat's one line that is not a parameter of a run


def _layout() -> dict[int, tuple[str, Parameter | None]]:
    """HPL.dat's lines from 5 on (after the titles, output name and device), by number:
    a list's count, a parameter's value(s), or the threshold."""
    layout: dict[int, tuple[str, Parameter | None]] = {_THRESHOLD_LINE: ("threshold", None)}
    for p in PARAMETERS:
        if p.count is not None:
            layout[p.line - 1] = ("count", p)
        layout[p.line] = ("values", p)
    return dict(sorted(layout.items()))


_LAYOUT = _layout()


def _code(p: Parameter, value: int | bool) -> int:
    if p.type is bool:
        return p.true_code if value else 1 - p.true_code
    return int(value)


def format_hpl_dat(params: HplParams) -> str:
    """HPL.dat text for `params`; output goes to stdout unless `params.output` names a file.

    >>> from hplsim.hpl.config import HplParams
    >>> text = format_hpl_dat(HplParams(ns=(1000,), nbs=(64,), grids=((2, 2),), bcasts=(0, 5)))
    >>> print(text.splitlines()[5])
    1000         Ns
    """
    if params.output == "stdout":
        out_name, device = "HPL.out", "6"
    elif params.output == "stderr":
        out_name, device = "HPL.out", "7"
    else:
        out_name, device = params.output, "8"

    def row(values, comment: str) -> str:
        text = " ".join(str(v) for v in values)
        return f"{text:<12} {comment}"  # a space always: a long value must not run into the comment

    lines = [
        *_HEADER,
        row([out_name], "output file name (if any)"),
        row([device], "device out (6=stdout,7=stderr,file)"),
    ]
    for kind, p in _LAYOUT.values():
        if p is None:
            lines.append(row([repr(float(params.threshold))], "threshold"))
            continue
        values = params.values(p.name)
        if kind == "count":
            assert p.count is not None
            lines.append(row([len(values)], p.count[0]))
        else:
            lines.append(row([_code(p, v) for v in values], p.comment))
    return "\n".join(lines) + "\n"


def write_hpl_dat(params: HplParams, path: Path) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(format_hpl_dat(params))
    tmp.replace(path)


class _Lines:
    def __init__(self, text: str, source: str):
        self.lines = text.splitlines()
        self.source = source
        self.pos = 0

    def fail(self, what: str) -> HplsimError:
        return HplsimError(f"malformed HPL.dat {self.source}, line {self.pos}: {what}")

    def next(self, what: str) -> list[str]:
        if self.pos >= len(self.lines):
            self.pos += 1
            raise self.fail(f"missing line for {what}")
        line = self.lines[self.pos]
        self.pos += 1
        return line.split()

    def ints(self, what: str, count: int, minimum: int | None = None, allowed: set[int] | None = None,
             maximum: int | None = None) -> list[int]:
        words = self.next(what)
        if len(words) < count:
            raise self.fail(f"expected {count} value(s) of {what}, found {len(words)}")
        values = []
        for word in words[:count]:
            try:
                value = int(word)
            except ValueError:
                raise self.fail(f"{what} value {word!r} is not an integer") from None
            if minimum is not None and value < minimum:
                raise self.fail(f"{what} value {value} is below {minimum}")
            if maximum is not None and value > maximum:
                raise self.fail(f"{what} value {value} is above {maximum}")
            if allowed is not None and value not in allowed:
                raise self.fail(f"unknown {what} code {value} (allowed: {sorted(allowed)})")
            values.append(value)
        return values

    def values(self, p: Parameter, count: int) -> list[int | bool]:
        """`count` values of `p` on the next line, checked against its range."""
        if p.type is bool:
            codes = self.ints(p.label, count, allowed={0, 1})
            return [code == p.true_code for code in codes]
        if p.codes:
            return list(self.ints(p.label, count, allowed=set(p.codes)))
        return list(self.ints(p.label, count, minimum=p.minimum, maximum=p.maximum))

    def count(self, what: str) -> int:
        (value,) = self.ints(f"number of {what}", 1, minimum=1)
        if value > MAX_PARAM:
            raise self.fail(f"number of {what} is {value}; HPL accepts at most {MAX_PARAM}")
        return value


def parse_hpl_dat(text: str, source: str = "<text>") -> HplParams:
    """The lists of an HPL.dat's text; anything HPL would misread is an `HplsimError`
    naming `source` and the line.

    >>> from hplsim.hpl.config import HplParams
    >>> params = HplParams(ns=(1000,), nbs=(64,), grids=((2, 2),), bcasts=(0, 5))
    >>> parsed = parse_hpl_dat(format_hpl_dat(params))
    >>> parsed == params, [c.label() for c in parsed.configs()]
    (True, ['WR10C2R4', 'WR15C2R4'])
    """
    r = _Lines(text, source)
    r.next("title line")
    r.next("second title line")
    out_name = r.next("output file name")
    (device,) = r.ints("device out", 1)
    if device == 6:
        output = "stdout"
    elif device == 7:
        output = "stderr"
    else:
        if not out_name:
            raise r.fail("output file name is empty")
        output = out_name[0]
    found: dict[str, list] = {}
    count = 0
    threshold = 0.0
    for kind, p in _LAYOUT.values():
        if p is None:
            words = r.next("threshold")
            try:
                threshold = float(words[0])
            except (IndexError, ValueError):
                raise r.fail("threshold is not a number") from None
        elif kind == "count":
            assert p.count is not None
            count = r.count(p.count[1])
        else:
            found[p.name] = r.values(p, count if p.listed else 1)
    fields = {p.list_field: (tuple(found[p.name]) if p.listed else found[p.name][0])
              for p in PARAMETERS if p.list_field != "grids"}
    return HplParams(grids=tuple(zip(found["p"], found["q"])), threshold=threshold, output=output, **fields)


def read_hpl_dat(path: Path) -> HplParams:
    return parse_hpl_dat(read_text(path, "HPL.dat"), str(path))

"""HPL.dat: the one reader and the one writer.

The reader is stricter than HPL's own (which silently maps unknown codes to defaults):
every line is checked and the first problem is reported with its line number.
"""

from __future__ import annotations

from pathlib import Path

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplParams

_HEADER = ("HPLinpack benchmark input file", "Innovative Computing Laboratory, University of Tennessee")


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

    ps = [p for p, _ in params.grids]
    qs = [q for _, q in params.grids]
    lines = [
        *_HEADER,
        row([out_name], "output file name (if any)"),
        row([device], "device out (6=stdout,7=stderr,file)"),
        row([len(params.ns)], "# of problems sizes (N)"),
        row(params.ns, "Ns"),
        row([len(params.nbs)], "# of NBs"),
        row(params.nbs, "NBs"),
        row([params.pmap], "PMAP process mapping (0=Row-,1=Column-major)"),
        row([len(params.grids)], "# of process grids (P x Q)"),
        row(ps, "Ps"),
        row(qs, "Qs"),
        row([repr(float(params.threshold))], "threshold"),
        row([len(params.pfacts)], "# of panel fact"),
        row(params.pfacts, "PFACTs (0=left, 1=Crout, 2=Right)"),
        row([len(params.nbmins)], "# of recursive stopping criterium"),
        row(params.nbmins, "NBMINs (>= 1)"),
        row([len(params.ndivs)], "# of panels in recursion"),
        row(params.ndivs, "NDIVs"),
        row([len(params.rfacts)], "# of recursive panel fact."),
        row(params.rfacts, "RFACTs (0=left, 1=Crout, 2=Right)"),
        row([len(params.bcasts)], "# of broadcast"),
        row(params.bcasts, "BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)"),
        row([len(params.depths)], "# of lookahead depth"),
        row(params.depths, "DEPTHs (>=0)"),
        row([params.swap], "SWAP (0=bin-exch,1=long,2=mix)"),
        row([params.swap_threshold], "swapping threshold"),
        row([0 if params.l1_transposed else 1], "L1 in (0=transposed,1=no-transposed) form"),
        row([0 if params.u_transposed else 1], "U  in (0=transposed,1=no-transposed) form"),
        row([1 if params.equil else 0], "Equilibration (0=no,1=yes)"),
        row([params.align], "memory alignment in double (> 0)"),
    ]
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

    def ints(self, what: str, count: int, minimum: int | None = None, allowed: set[int] | None = None) -> list[int]:
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
            if allowed is not None and value not in allowed:
                raise self.fail(f"unknown {what} code {value} (allowed: {sorted(allowed)})")
            values.append(value)
        return values

    def count(self, what: str) -> int:
        (value,) = self.ints(f"number of {what}", 1, minimum=1)
        if value > 20:
            raise self.fail(f"number of {what} is {value}; HPL accepts at most 20")
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
    ns = r.ints("N", r.count("problem sizes"), minimum=1)
    nbs = r.ints("NB", r.count("NBs"), minimum=1)
    (pmap,) = r.ints("PMAP", 1, allowed={0, 1})
    ngrids = r.count("process grids")
    ps = r.ints("P", ngrids, minimum=1)
    qs = r.ints("Q", ngrids, minimum=1)
    words = r.next("threshold")
    try:
        threshold = float(words[0])
    except (IndexError, ValueError):
        raise r.fail("threshold is not a number") from None
    pfacts = r.ints("PFACT", r.count("panel facts"), allowed={0, 1, 2})
    nbmins = r.ints("NBMIN", r.count("recursive stopping criteria"), minimum=1)
    ndivs = r.ints("NDIV", r.count("panels in recursion"), minimum=2)
    rfacts = r.ints("RFACT", r.count("recursive panel facts"), allowed={0, 1, 2})
    bcasts = r.ints("BCAST", r.count("broadcasts"), allowed={0, 1, 2, 3, 4, 5})
    depths = r.ints("DEPTH", r.count("lookahead depths"), minimum=0)
    (swap,) = r.ints("SWAP", 1, allowed={0, 1, 2})
    (swap_threshold,) = r.ints("swapping threshold", 1, minimum=0)
    (l1,) = r.ints("L1 form", 1, allowed={0, 1})
    (u,) = r.ints("U form", 1, allowed={0, 1})
    (equil,) = r.ints("equilibration", 1, allowed={0, 1})
    (align,) = r.ints("memory alignment", 1, minimum=1)
    return HplParams(
        ns=tuple(ns), nbs=tuple(nbs), grids=tuple(zip(ps, qs)), pmap=pmap, threshold=threshold,
        pfacts=tuple(pfacts), nbmins=tuple(nbmins), ndivs=tuple(ndivs), rfacts=tuple(rfacts),
        bcasts=tuple(bcasts), depths=tuple(depths), swap=swap, swap_threshold=swap_threshold,
        l1_transposed=(l1 == 0), u_transposed=(u == 0), equil=bool(equil), align=align, output=output,
    )


def read_hpl_dat(path: Path) -> HplParams:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise HplsimError(f"cannot read HPL.dat {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HplsimError(f"malformed HPL.dat {path}: not a text file") from None
    return parse_hpl_dat(text, str(path))

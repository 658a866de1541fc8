"""HPL's output: the result lines and the residual checks, read back.

HPL 2.0 prints, for each test::

    T/V                N    NB     P     Q               Time                 Gflops
    --------------------------------------------------------------------------------
    WR11C2R4        2000   128     1     2               0.23              2.327e+01
    --------------------------------------------------------------------------------
    ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        0.0036790 ...... PASSED

(the residual line is absent when the threshold of HPL.dat is not positive: the check is
skipped). Time has two decimals only; Gflops has four significant digits, so it is the
precise figure of a short run.

Built with ``-DHPL_DETAILED_TIMING``, HPL also prints after each test the largest time any
process spent in each phase of the factorization (`parse_phases`)::

    Max aggregated wall time rfact . . . :               0.69
    + Max aggregated wall time pfact . . :               0.65
    + Max aggregated wall time mxswp . . :               0.53
    Max aggregated wall time update  . . :              20.00
    + Max aggregated wall time laswp . . :               2.62
    Max aggregated wall time up tr sv  . :               0.12

(after a ``--VVV--VVV--…`` rule; ``+`` marks a part of the line above it; a phase that
took no time is not printed.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig

_RESULT = re.compile(
    r"^(W[RC]\d\d[LCR]\d+[LCR]\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.eE+-]+)\s*$")
_RESIDUAL = re.compile(r"^(\|\|.*)=\s*([0-9.eE+-]+|nan|-?inf)\s*\.+\s*(PASSED|FAILED)\s*$", re.I)
#: HPL's phases, in the order it prints them, as `parse_phases` names them (HPL's names,
#: "_" for its spaces): the recursive panel factorization (rfact) and within it the panel
#: factorization (pfact) and its pivot exchanges (mxswp); the trailing update (update) and
#: within it the row swaps (laswp); the final triangular solve (up_tr_sv).
PHASES = ("rfact", "pfact", "mxswp", "update", "laswp", "up_tr_sv")
_PART_PHASES = ("pfact", "mxswp", "laswp")  # the ones HPL prints with a "+": part of the line above
_PHASE = re.compile(r"^\+?\s*Max aggregated wall time (" + "|".join(p.replace("_", " ") for p in PHASES)
                    + r")[ .]*:\s*([0-9.eE+-]+)\s*$")
_PHASES_RULE = "--VVV--VVV--"
_ERROR = re.compile(r"HPL ERROR|Illegal input|illegal input values|Need at least|Execution stopped", re.I)

PASSED, FAILED, SKIPPED = "PASSED", "FAILED", "SKIPPED"


@dataclass
class HplResult:
    """One test of an HPL run, as HPL printed it."""

    label: str  # T/V, e.g. WR11C2R4
    n: int
    nb: int
    p: int
    q: int
    time_s: float
    gflops: float
    residuals: list[tuple[str, float, str]] = field(default_factory=list)  # (expression, value, verdict)

    @property
    def residual_check(self) -> str:
        if not self.residuals:
            return SKIPPED
        return FAILED if any(v != PASSED for _, _, v in self.residuals) else PASSED

    @property
    def residual(self) -> float | None:
        return max(r for _, r, _ in self.residuals) if self.residuals else None

    def matches(self, config: HplConfig) -> bool:
        return (self.label, self.n, self.nb, self.p, self.q) == (config.label(), config.n, config.nb, config.p,
                                                                 config.q)


def parse_hpl_output(text: str) -> list[HplResult]:
    """Every test HPL reported, in order, each with the residual lines that follow it."""
    results: list[HplResult] = []
    for line in text.splitlines():
        line = line.strip()
        m = _RESULT.match(line)
        if m:
            label, n, nb, p, q, t, gf = m.groups()
            results.append(HplResult(label, int(n), int(nb), int(p), int(q), float(t), float(gf)))
            continue
        m = _RESIDUAL.match(line)
        if m and results:
            results[-1].residuals.append((m.group(1).strip(), float(m.group(2)), m.group(3).upper()))
    return results


def parse_phases(text: str) -> list[dict[str, float]]:
    """HPL's per-phase times (``HPL_DETAILED_TIMING``), one dict per test in order, each
    phase's largest time over the processes in seconds. A block starts at the ``--VVV--``
    rule HPL prints only in that build; a phase it leaves out (it took no time) is 0, so a
    run whose phases all took no time still has its block.

    >>> parse_phases("--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV-\\n"
    ...              "Max aggregated wall time rfact . . . :  0.69\\n"
    ...              "+ Max aggregated wall time mxswp . . :  0.53\\n"
    ...              "Max aggregated wall time update  . . : 20.00\\n")
    [{'rfact': 0.69, 'pfact': 0.0, 'mxswp': 0.53, 'update': 20.0, 'laswp': 0.0, 'up_tr_sv': 0.0}]
    """
    blocks: list[dict[str, float]] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(_PHASES_RULE):
            blocks.append(dict.fromkeys(PHASES, 0.0))
            continue
        m = _PHASE.match(line)
        if m and blocks:
            blocks[-1][m.group(1).replace(" ", "_")] = float(m.group(2))
    return blocks


def expect_phases(text: str) -> dict[str, float]:
    """The phase times of the single test in the output of a timing build's run, or a
    one-line error."""
    blocks = parse_phases(text)
    if len(blocks) != 1:
        raise HplsimError(f"HPL's timing build printed {len(blocks)} blocks of phase times, expected 1")
    return blocks[0]


def format_phases(config: HplConfig, time_s: float, phases: dict[str, float], what: str) -> str:
    """The phases as HPL names them, in its order, each with its share of HPL's time (the
    same lines for an emulated and a real run, so that they read side by side).

    >>> print(format_phases(HplConfig(n=2000, nb=64, p=1, q=2), 2.0, dict.fromkeys(PHASES, 0.5), "real"))
    WR11C2R4 N=2000: HPL's phases (real), the largest time of any process (HPL time 2 s)
      rfact           0.5000 s   25.0 %
      + pfact         0.5000 s   25.0 %
      + mxswp         0.5000 s   25.0 %
      update          0.5000 s   25.0 %
      + laswp         0.5000 s   25.0 %
      up tr sv        0.5000 s   25.0 %
    """
    lines = [f"{config.label()} N={config.n}: HPL's phases ({what}), the largest time of any process "
             f"(HPL time {time_s:.4g} s)"]
    for name in PHASES:
        label = ("+ " if name in _PART_PHASES else "") + name.replace("_", " ")
        lines.append(f"  {label:<10}{phases[name]:>12.4f} s {100 * phases[name] / time_s:>6.1f} %")
    return "\n".join(lines)


def error_lines(text: str) -> list[str]:
    """HPL's own complaints (illegal input, errors), for a one-line explanation."""
    return [line.strip() for line in text.splitlines() if _ERROR.search(line)]


def expect_result(text: str, config: HplConfig) -> HplResult:
    """The result of the single test `config` in the output of a run, or a one-line error."""
    results = parse_hpl_output(text)
    if not results:
        errors = error_lines(text)
        raise HplsimError("HPL printed no result" + (f": {errors[0]}" if errors else ""))
    if len(results) != 1 or not results[0].matches(config):
        got = ", ".join(f"{r.label} N={r.n} NB={r.nb} {r.p}x{r.q}" for r in results)
        raise HplsimError(f"HPL reported {got}, expected {config.label()} N={config.n} NB={config.nb} "
                          f"{config.p}x{config.q}")
    return results[0]


def text_table(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[object]]) -> str:
    """A fixed-width results table in HPL's manner (a rule under the titles), for the
    commands that print configurations one per line. `columns`: (title, the cells' format
    spec, e.g. ``>14.6g``; the title takes its alignment and width).

    >>> print(text_table([("T/V", "<9"), ("Gflops", ">8.3g")], [["WR11C2R4", 23.2714]]))
    T/V        Gflops
    -----------------
    WR11C2R4     23.3
    """
    widths = [re.match(r"[<>^]?\d*", spec).group() for _, spec in columns]
    head = "".join(f"{title:{width}}" for (title, _), width in zip(columns, widths))
    lines = [head, "-" * len(head)]
    lines += ["".join(f"{cell:{spec}}" for cell, (_, spec) in zip(row, columns)) for row in rows]
    return "\n".join(lines)

#!/usr/bin/env python3
"""What tracing costs: wall time of a prediction traced vs untraced (interleaved, so that
both see the same machine), the trace's size on disk, and how long its Gantt chart (and the
whole report) takes to open in headless Chromium.

Default scenario (issue 21's target): the Dahu preset (1,024 ranks), N = 50,000, the first
10 panels traced — each simulation takes minutes; run it on a quiet machine:

    .venv/bin/python benchmarks/trace_cost.py --repeat 3 --json trace_cost.json

A small check of the script itself (seconds):

    .venv/bin/python benchmarks/trace_cost.py -N 4000 --predict-args "-P 2 -Q 4 --nb 64" --panels 4

Targets (issue 21): traced ≤ 1.3 × untraced wall time, trace ≤ 200 MB, Gantt opens in ≤ 3 s.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main, spread, write_json  # noqa: E402

from hplsim.emulate.trace import read_trace  # noqa: E402
from hplsim.report.browser import open_page  # noqa: E402
from hplsim.report.page import Section, render, write_page  # noqa: E402
from hplsim.report.trace_figures import gantt, segments  # noqa: E402


def predict(args: argparse.Namespace, trace: Path | None) -> tuple[dict, float]:
    """The prediction's JSON and the command's wall time (with the trace's conversion)."""
    argv = [sys.executable, "-m", "hplsim.cli", "predict", "--preset", args.preset, "-N", str(args.n),
            "--seed", str(args.seed), "--json", *shlex.split(args.predict_args)]
    if trace is not None:
        argv += ["--trace", str(trace), "--trace-panels", str(args.panels)]
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(out.stderr.strip())
    return json.loads(out.stdout)[0], wall


def load_ms(page: Path, wait_ms: int) -> float:
    view = open_page(page, real_time_ms=wait_ms)
    if view.console:
        raise SystemExit(f"{page}: the browser console says: {view.console[:3]}")
    ms = view.attribute("data-load-ms")
    if ms is None:
        raise SystemExit(f"{page}: not drawn within {wait_ms} ms (raise --wait-ms)")
    return float(ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="dahu")
    ap.add_argument("-N", "--n", type=int, default=50000)
    ap.add_argument("--panels", type=int, default=10, help="--trace-panels")
    ap.add_argument("--predict-args", default="", help="more predict options, e.g. \"-P 2 -Q 4 --nb 64\"")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="pairs of (untraced, traced) runs")
    ap.add_argument("--wait-ms", type=int, default=30000, help="how long Chromium may take to draw a page")
    ap.add_argument("--keep", type=Path, help="keep the last trace and pages here")
    ap.add_argument("--json", help="write the figures to this JSON file")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="hplsim-trace-cost-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        plain, traced, ratios, sim_ratios = [], [], [], []
        for i in range(args.repeat):
            a, wall_a = predict(args, None)
            b, wall_b = predict(args, work / "trace")
            if a["time_s"] != b["time_s"]:
                raise SystemExit(f"tracing changed the prediction: {a['time_s']} vs {b['time_s']} s")
            plain.append(wall_a)
            traced.append(wall_b)
            ratios.append(wall_b / wall_a)
            sim_ratios.append(b["sim_wall_s"] / a["sim_wall_s"])
            print(f"pair {i + 1}: untraced {wall_a:.2f} s, traced {wall_b:.2f} s (x{ratios[-1]:.3f}; the simulation "
                  f"alone x{sim_ratios[-1]:.3f}); PSS {a['sim_memory_bytes'] / 1e6:.0f} / "
                  f"{b['sim_memory_bytes'] / 1e6:.0f} MB")
        size = sum(p.stat().st_size for p in (work / "trace").iterdir())
        trace = read_trace(work / "trace")
        seg = segments(trace)
        gantt_page = work / "gantt.html"
        write_page(gantt_page, render("Gantt", [Section("trace", "Gantt", figures=[gantt(trace, seg)])],
                                      [str(work / "trace")]))
        subprocess.run([sys.executable, "-m", "hplsim.cli", "report", str(work / "trace"), "-o",
                        str(work / "report.html")], check=True, capture_output=True)
        gantt_ms = [load_ms(gantt_page, args.wait_ms) for _ in range(args.repeat)]
        report_ms = [load_ms(work / "report.html", args.wait_ms) for _ in range(args.repeat)]

    ranks = trace.meta["ranks"]
    print(f"\n{args.preset} N={args.n} {ranks} ranks, first {args.panels} panels traced; {args.repeat} pair(s)")
    print(f"  predict wall, untraced:        {spread(plain)} s")
    print(f"  predict wall, traced:          {spread(traced)} s (with the conversion to Parquet)")
    print(f"  traced / untraced:             {spread(ratios)}   (target <= 1.3)")
    print(f"  the simulation alone:          {spread(sim_ratios)}")
    print(f"  trace on disk:                 {size / 1e6:.1f} MB, {len(trace.events):,} intervals "
          f"({size / max(len(trace.events), 1):.1f} B each)   (target <= 200 MB)")
    print(f"  Gantt page opened and drawn:   {spread([m / 1000 for m in gantt_ms])} s "
          f"({len(seg):,} segments)   (target <= 3 s)")
    print(f"  whole report opened and drawn: {spread([m / 1000 for m in report_ms])} s")
    write_json(args.json, {
        "preset": args.preset, "n": args.n, "ranks": ranks, "panels": args.panels, "predict_args": args.predict_args,
        "untraced_wall_s": plain, "traced_wall_s": traced, "ratio": ratios, "simulation_ratio": sim_ratios,
        "ratio_median": statistics.median(ratios), "trace_bytes": size, "intervals": len(trace.events),
        "gantt_load_ms": gantt_ms, "report_load_ms": report_ms,
    })


if __name__ == "__main__":
    run_main(main)

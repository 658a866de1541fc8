"""What `hplsim archive show` prints: the run in a few lines, the headline numbers
(dgemm/dtrsm Gflops per core, MPI latency and bandwidth), and whether the archive can be
trusted (status, completeness, failed commands). `summarise` gives the same as a dict
for `--json`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hplsim.calibrate.archive import Archive

# Calls below this many flops are dominated by call overhead: their "Gflops" would only
# drag the medians down and say nothing about the core's speed.
MIN_FLOPS = 1e6


def blas_flops(frame: pd.DataFrame) -> pd.Series:
    """Flop count of each call: dgemm 2·M·N·K; dtrsm order²·other (M²N left, MN² right)."""
    m = frame["m"].astype(float)
    n = frame["n"].astype(float)
    k = pd.to_numeric(frame["k"], errors="coerce").astype(float).fillna(0.0)
    left = frame["side"].astype(str) == "L"
    trsm = np.where(left, m * m * n, m * n * n)
    return pd.Series(np.where(frame["function"] == "dgemm", 2 * m * n * k, trsm), index=frame.index)


def _blas(frame: pd.DataFrame, design: pd.DataFrame | None) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": int(len(frame))}
    if frame.empty:
        return out
    out["total_seconds"] = float(frame["duration"].sum())
    out["durations_positive"] = bool((frame["duration"] > 0).all())
    f = frame.assign(gflops=blas_flops(frame) / frame["duration"] / 1e9)
    big = f[blas_flops(f) >= MIN_FLOPS]
    per = []
    for (host, cpu, core), g in big.groupby(["host", "cpu", "core"], sort=True):
        per.append({"host": host, "cpu": int(cpu), "core": int(core), "calls": int(len(g)),
                    "gflops_median": float(g.gflops.median()), "gflops_p10": float(g.gflops.quantile(0.1)),
                    "gflops_p90": float(g.gflops.quantile(0.9))})
    out["per_core"] = per
    if not big.empty:
        out["gflops_median"] = float(big.gflops.median())
    if design is not None and not design.empty:
        expected = design.groupby("repetition").size()
        got = frame.groupby(["rank", "repetition"]).size()
        incomplete = [f"rank {r} repetition {rep}: {n}/{expected.get(rep, 0)}"
                      for (r, rep), n in got.items() if n != expected.get(rep, 0)]
        out["incomplete"] = incomplete
    return out


def _mpi(frame: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"measurements": int(len(frame))}
    if frame.empty:
        return out
    ops = {}
    for op, g in frame.groupby("operation", sort=True):
        small = g[g["size"] <= 64]
        ops[op] = {"count": int(len(g)), "sizes": [int(g["size"].min()), int(g["size"].max())],
                   "median_small_s": float(small.duration.median()) if not small.empty else None}
    out["operations"] = ops
    pp = frame[frame.operation == "pingpong"]
    if not pp.empty:
        small = pp[pp["size"] <= 64]
        if not small.empty:
            out["latency_s"] = float(small.duration.median() / 2)
        large = pp[pp["size"] >= 1_000_000]
        if not large.empty:
            out["bandwidth_Bps"] = float((large["size"] / (large.duration / 2)).median())
    return out


def summarise(a: Archive) -> dict[str, Any]:
    meta = a.metadata
    s: dict[str, Any] = {
        "path": str(a.path), "kind": meta.get("kind"), "status": meta.get("status"),
        "abort_reason": meta.get("abort_reason"), "archive_format": meta.get("archive_format"),
        "start_time": meta.get("start_time"), "end_time": meta.get("end_time"),
        "hplsim": meta.get("hplsim"), "seed": meta.get("seed"), "design": meta.get("design"),
        "run": meta.get("run"), "hosts": meta.get("hosts"), "versions": meta.get("versions"),
        "counts": meta.get("counts"), "monitoring": meta.get("monitoring"),
        "load_average": meta.get("load_average"), "warnings": meta.get("warnings"),
    }
    design = a.table("design") if a.has_table("design") else None
    for fn in ("dgemm", "dtrsm"):
        if a.has_table(fn):
            s[fn] = _blas(a.table(fn), design)
    if a.has_table("mpi"):
        s["mpi"] = _mpi(a.table("mpi"))
    if a.has_table("hpl"):  # real HPL runs (hplsim run-real)
        runs = a.table("hpl")
        s["hpl"] = {"runs": int(len(runs))}
        if "gflops" in runs and not runs.empty:
            s["hpl"].update(gflops_median=float(runs.gflops.median()), gflops_min=float(runs.gflops.min()),
                            gflops_max=float(runs.gflops.max()))
    if a.has_table("monitoring"):
        mon = a.table("monitoring")
        s["monitoring_samples"] = {
            "rows": int(len(mon)),
            "frequency_hz_mean": float(mon.frequency_hz.mean()) if mon.frequency_hz.notna().any() else None,
            "temperature_c_max": float(mon.temperature_c.max()) if mon.temperature_c.notna().any() else None,
        }
    failed = [e for e in a.log if e.get("exit_code") != 0]
    s["commands"] = {"logged": len(a.log), "failed": [" ".join(e["argv"][:3]) for e in failed]}
    return s


def _si(x: float | None, unit: str) -> str:
    if x is None:
        return "n/a"
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def format_summary(s: dict[str, Any]) -> str:
    what = "calibration" if s["kind"] in ("dgemm", "dtrsm", "mpi") else "archive"
    lines = [f"{s['path']}: {s['kind']} {what}, {s['status']}"
             + (f" ({s['abort_reason']})" if s.get("abort_reason") else "")]

    def row(label: str, text: str) -> None:
        lines.append(f"  {label:<11} {text}")

    hp = s.get("hplsim") or {}
    commit = (hp.get("git_commit") or "")[:10]
    row("when", f"{s.get('start_time')} → {s.get('end_time')}")
    row("hplsim", f"{hp.get('version')}" + (f" ({commit}{', dirty' if hp.get('git_dirty') else ''})" if commit else ""))
    hosts = s.get("hosts") or []
    row("hosts", ", ".join(f"{h['name']} ({h.get('cpu_model')}, {h.get('logical_cpus')} CPUs)" for h in hosts) or "n/a")
    d = s.get("design") or {}
    if d:
        row("design", f"{d.get('generator')}, {d.get('rows')} rows × {d.get('repetitions')} repetition(s), "
                      f"seed {s.get('seed')}, {'shuffled' if d.get('shuffled') else 'in order'}")
    r = s.get("run") or {}
    where = f"cores {','.join(map(str, r['cores']))}" if r.get("cores") else ", ".join(r.get("hosts") or [])
    extra = ""
    if r.get("init"):
        extra = f", init {r['init']}" + (f" ({r['mask_bits']} low bits masked)" if r.get("mask_bits") else "")
        extra += f", warm-up {r.get('warmup_seconds')} s"
    if r.get("others") == "spin":  # the measured cores' neighbours polled, as ranks waiting in MPI
        extra += f", cores {','.join(map(str, r.get('other_cores') or []))} spinning"
    if r:
        row("run", f"{r.get('launcher')}, {r.get('processes')} process(es) on {where}{extra}")
    v = s.get("versions") or {}
    if v:
        row("versions", "; ".join(str(v[k]) for k in ("openblas", "compiler", "mpi", "simgrid") if v.get(k)))
    c = s.get("counts") or {}
    if c:
        row("rows", f"{c.get('measured')} of {c.get('planned')} measured")
    for fn in ("dgemm", "dtrsm"):
        b = s.get(fn)
        if not b:
            continue
        row(fn, f"{b['calls']} calls, {b.get('total_seconds', 0):.2f} s in calls, "
                f"median {b.get('gflops_median', float('nan')):.1f} Gflops (calls ≥ 1 Mflop)")
        for p in b.get("per_core", []):
            lines.append(f"  {'':<11}   {p['host']} cpu {p['cpu']} core {p['core']}: {p['calls']} calls, "
                         f"{p['gflops_median']:.1f} Gflops median [{p['gflops_p10']:.1f} … {p['gflops_p90']:.1f}]")
        if b.get("incomplete"):
            row("incomplete", "; ".join(b["incomplete"][:5]))
    mpi = s.get("mpi")
    if mpi:
        row("mpi", f"{mpi['measurements']} measurements; latency {_si(mpi.get('latency_s'), 's')} "
                   f"(pingpong ≤ 64 B, half round trip), bandwidth {_si(mpi.get('bandwidth_Bps'), 'B/s')} "
                   f"(pingpong ≥ 1 MB)")
        for op, o in (mpi.get("operations") or {}).items():
            lines.append(f"  {'':<11}   {op:<9} {o['count']:>5} rows, sizes {o['sizes'][0]}…{o['sizes'][1]} B, "
                         f"median {_si(o['median_small_s'], 's')} at ≤ 64 B")
    load = s.get("load_average") or {}
    if load.get("start"):
        # at the start the load is other jobs' (at the end it includes ours)
        busy = load["start"][0] > 0.5 + (load.get("logical_cpus") or 0) - ((s.get("run") or {}).get("processes") or 0)
        row("load", f"1-min load average {load['start'][0]} at start, {(load.get('end') or ['?'])[0]} at end "
                    f"({load.get('logical_cpus')} CPUs)" + ("  ← other jobs were running" if busy else ""))
    for w in s.get("warnings") or []:
        row("warning", w)
    hpl = s.get("hpl")
    if hpl:
        text = f"{hpl['runs']} runs"
        if "gflops_median" in hpl:
            text += f", {hpl['gflops_median']:.3g} Gflops median [{hpl['gflops_min']:.3g} … {hpl['gflops_max']:.3g}]"
        row("hpl", text)
    mon = s.get("monitoring") or {}
    ms = s.get("monitoring_samples") or {}
    text = (f"frequency {mon.get('frequency') or 'not exposed'}, temperature {mon.get('temperature') or 'not exposed'}")
    if ms:
        text += f"; {ms['rows']} samples, mean {_si(ms.get('frequency_hz_mean'), 'Hz')}"
        if ms.get("temperature_c_max") is not None:
            text += f", max {ms['temperature_c_max']:.0f} °C"
    if mon:
        row("monitoring", text)
    cm = s.get("commands") or {}
    row("commands", f"{cm.get('logged')} logged" + (f", failed: {'; '.join(cm['failed'])}" if cm.get("failed") else ", all exited 0"))
    return "\n".join(lines)

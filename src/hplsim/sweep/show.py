"""Reading a results store: the best configurations with their spread across seeds, the
what-if comparison of variants, failures, CSV export."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

from hplsim.hpl.config import BCAST_NAMES
from hplsim.outputs import atomic
from hplsim.sweep.store import HPL_COLUMNS
from hplsim.models.intervals import t_half

#: What makes two runs "the same configuration" (they differ only by seed).
GROUP_COLUMNS = [*HPL_COLUMNS, "label", "platform", "platform_variation", "platform_digest", "model",
                 "model_variation", "model_digest", "platform_name", "model_name"]
#: What tells variants apart: the base platform/model and the variation's name, shortened
#: to the variation's name when the store holds one base platform (model) only.
VARIANT = ["platform_name", "model_name"]
ALWAYS_SHOWN = ("n", "nb", "p", "q")


def frame(runs: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(runs)
    if df.empty:
        return pd.DataFrame(columns=[*GROUP_COLUMNS, "seed", "status", "gflops", "error", "attempts"])
    for kind in ("platform", "model"):
        several = df[kind].nunique() > 1
        df[f"{kind}_name"] = [f"{base} [{v}]" if several else str(v)
                              for base, v in zip(df[kind], df[f"{kind}_variation"])]
    return df


def configurations(df: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (successful runs only): Gflops mean, min, max, standard
    deviation and number of seeds, best first."""
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame(columns=[*GROUP_COLUMNS, "mean", "min", "max", "std", "seeds", "low", "high"])
    g = ok.groupby(GROUP_COLUMNS, sort=False, dropna=False)["gflops"]
    out = g.agg(["mean", "min", "max", "std", "count"]).rename(columns={"count": "seeds"}).reset_index()
    # the 90 % interval for one more run, from the seeds' spread (models/intervals.py); one seed: none
    half = [t_half(sd, int(k)) if k >= 2 else float("nan") for sd, k in zip(out["std"], out["seeds"])]
    out["low"] = out["mean"] - half
    out["high"] = out["mean"] + half
    return out.sort_values("mean", ascending=False, kind="stable").reset_index(drop=True)


def variants(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(platform name, model name) of each variant, in the order first stored."""
    return list(dict.fromkeys(zip(df["platform_name"], df["model_name"])))


def reference_variant(df: pd.DataFrame) -> tuple[str, str] | None:
    """The first unchanged platform and model stored, else the first variant stored."""
    if df.empty:
        return None
    unchanged = df[(df["platform_variation"] == "base") & (df["model_variation"] == "base")]
    return variants(unchanged)[0] if not unchanged.empty else variants(df)[0]


def of_variant(confs: pd.DataFrame, key: tuple[str, str]) -> pd.DataFrame:
    return confs[(confs["platform_name"] == key[0]) & (confs["model_name"] == key[1])]


def paired(df: pd.DataFrame, ref: tuple[str, str]) -> dict[tuple[str, str], float]:
    """Per variant: the mean over every (HPL configuration, seed) it shares with the
    reference of Gflops / reference Gflops - 1. With a population model the same seed is
    the same sampled cluster, so this compares like with like, configuration by
    configuration, and is steadier than the difference of the best configurations."""
    ok = df[df["status"] == "ok"]
    key = [*HPL_COLUMNS, "seed"]
    base = ok[(ok["platform_name"] == ref[0]) & (ok["model_name"] == ref[1])].groupby(key)["gflops"].mean()
    out = {}
    for variant, group in ok.groupby(VARIANT, sort=False):
        mine = group.groupby(key)["gflops"].mean()
        common = mine.index.intersection(base.index)
        if len(common):
            out[variant] = float((mine[common] / base[common]).mean() - 1)
    return out


def what_if(df: pd.DataFrame) -> pd.DataFrame:
    """Per variant: its best configuration and Gflops, relative to the reference variant's
    best, the reference's best configuration run on that variant (same HPL parameters), and
    the paired mean ratio over every configuration and seed (`paired`)."""
    confs = configurations(df)
    if confs.empty:
        return pd.DataFrame()
    ref = reference_variant(df)
    pairs = paired(df, ref)
    rows = []
    ref_best = of_variant(confs, ref)
    ref_row = ref_best.iloc[0] if not ref_best.empty else None
    for key, group in confs.groupby(VARIANT, sort=False):
        best = group.iloc[0]
        same = None
        if ref_row is not None:
            match = group
            for c in HPL_COLUMNS:
                match = match[match[c] == ref_row[c]]
            same = float(match["mean"].iloc[0]) if not match.empty else None
        rows.append({
            "platform": key[0], "model": key[1], "configurations": len(group),
            "best_gflops": float(best["mean"]), "best_min": float(best["min"]), "best_max": float(best["max"]),
            "seeds": int(best["seeds"]), "best": describe(best),
            "vs_reference": float(best["mean"]) / float(ref_row["mean"]) - 1 if ref_row is not None else None,
            "reference_config_gflops": same, "paired_vs_reference": pairs.get(key),
        })
    # The reference first, then the variants from best to worst.
    rows.sort(key=lambda r: ((r["platform"], r["model"]) != ref, -r["best_gflops"]))
    return pd.DataFrame(rows)


def describe(row) -> str:
    return f"N={row['n']} NB={row['nb']} {row['p']}x{row['q']} {row['label']}"


def varying(df: pd.DataFrame) -> list[str]:
    """HPL parameters worth a column: N, NB, P, Q and whatever else takes several values."""
    return [c for c in HPL_COLUMNS if c in ALWAYS_SHOWN or (c in df and df[c].nunique() > 1)]


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def summary(df: pd.DataFrame, source: str, top: int = 10) -> str:
    if df.empty:
        return f"{source}: no runs stored yet"
    ok = int((df["status"] == "ok").sum())
    failed = len(df) - ok
    many = len(variants(df)) > 1
    seeds = sorted(df["seed"].unique())
    lines = [f"{source}: {len(df)} runs ({ok} ok, {failed} failed); seeds "
             f"{', '.join(map(str, seeds[:8]))}{' ...' if len(seeds) > 8 else ''}; "
             f"{len(variants(df))} platform/model variant{'s' if many else ''}"]
    confs = configurations(df)
    if not confs.empty:
        params = varying(df)
        many_seeds = confs["seeds"].max() > 1
        headers = ["#", "Gflops"] + (["min", "max", "sd", "seeds", "90 % interval"] if many_seeds else []) + \
                  [p.upper() for p in params] + ["T/V"] + \
                  (["platform", "model"] if many else [])
        rows = []
        for i, r in confs.head(top).iterrows():
            row = [str(i + 1), f"{r['mean']:.4g}"]
            if many_seeds:
                sd = "" if pd.isna(r["std"]) else f"{r['std']:.3g}"
                iv = "" if pd.isna(r["low"]) else f"[{max(r['low'], 0):.4g}, {r['high']:.4g}]"
                row += [f"{r['min']:.4g}", f"{r['max']:.4g}", sd, str(int(r["seeds"])), iv]
            row += [str(int(r[p])) for p in params] + [str(r["label"])]
            if many:
                row += [str(r["platform_name"]), str(r["model_name"])]
            rows.append(row)
        lines += ["", f"Best configurations (of {len(confs)}; Gflops = mean over seeds"
                      + ("; min, max, sd: spread across seeds; 90 % interval for one more run, from the seeds)"
                         if many_seeds else ")"),
                  _table(headers, rows)]
        if "bcast" in params:
            lines.append("BCAST: " + ", ".join(f"{k} {v}" for k, v in BCAST_NAMES.items()))
    if many:
        w = what_if(df)
        ref = reference_variant(df)
        rows = []
        for _, r in w.iterrows():
            vs = "" if r["vs_reference"] is None else f"{100 * r['vs_reference']:+.1f} %"
            same = "" if r["reference_config_gflops"] is None else f"{r['reference_config_gflops']:.4g}"
            spread = f"{r['best_min']:.4g}-{r['best_max']:.4g}" if r["seeds"] > 1 else ""
            pair = "" if r["paired_vs_reference"] is None else f"{100 * r['paired_vs_reference']:+.1f} %"
            rows.append([r["platform"], r["model"], str(r["configurations"]),
                         f"{r['best_gflops']:.4g}", vs, spread, same, pair, r["best"]])
        lines += ["", f"What if (best configuration of each variant; reference: platform {ref[0]}, model {ref[1]})",
                  _table(["platform", "model", "configs", "best Gflops", "vs ref", "seeds min-max", "ref's best here",
                         "paired vs ref", "best"], rows)]
    if failed:
        lines += ["", f"{failed} failed run(s): hplsim sweep show {source} --failed"]
    return "\n".join(lines)


def failures(df: pd.DataFrame) -> str:
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return "no failed run"
    lines = []
    for _, r in bad.iterrows():
        lines.append(f"{describe(r)} seed {r['seed']} [{r['platform_name']} / {r['model_name']}] "
                     f"(attempts {r['attempts']}): {r['error']}")
    return "\n".join(lines)


def write_csv(runs: list[dict[str, Any]], path: Path) -> None:
    with atomic(path, "the CSV (--csv)") as tmp, open(tmp, "w", newline="") as f:
        fields = list(runs[0]) if runs else ["hash", "status", *HPL_COLUMNS, "seed", "gflops"]
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(runs)

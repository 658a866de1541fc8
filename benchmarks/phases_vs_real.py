#!/usr/bin/env python3
"""A closed-loop error, phase by phase: HPL's own per-phase times of real runs against the
emulation's, same model, platform and seed (lab notebook E99).

    .venv/bin/hplsim run-real -N 10000 --nb 128 -P 2,1 -Q 1,2 --depth 0,1 --repeat 3 --phases --out real.zip
    .venv/bin/python benchmarks/phases_vs_real.py real.zip --model VAL/model.yaml --platform VAL/platform.yaml

prints, for each configuration of the archive and each of HPL's phases (rfact, pfact, mxswp,
update, laswp, up_tr_sv, and HPL's whole time as `total`), the real runs' median and range,
the emulation's figure, and their difference (emulated − real).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require_files, run_main  # noqa: E402

import pandas as pd  # noqa: E402

from hplsim.calibrate.archive import read_archive  # noqa: E402
from hplsim.errors import HplsimError  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.platform.spec import load_platform  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.real.run import read_results  # noqa: E402
from hplsim.validate.phases import phase_table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("real", type=Path, help="archive of `hplsim run-real --phases`")
    ap.add_argument("--model", type=Path, required=True, help="model file the predictions use")
    ap.add_argument("--platform", type=Path, required=True, help="platform the predictions use")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not args.real.is_file():
        raise HplsimError(f"{args.real}: no such file")
    require_files(model=args.model, platform=args.platform)

    archive = read_archive(args.real)
    if archive.kind != "hpl" or not archive.has_table("hpl"):
        raise HplsimError(f"{args.real}: not an archive of hplsim run-real")
    table = archive.table("hpl")
    fields = list(HplConfig.__dataclass_fields__)
    configs = [HplConfig(**row) for row in table[fields].drop_duplicates().to_dict("records")]
    real = read_results(args.real, configs, 1)
    if real is None or any(r.phases is None for r in real):
        raise HplsimError(f"{args.real}: its runs were not made with --phases (or the archive is incomplete)")
    platform = load_platform(args.platform)
    source = ModelSource.from_path(args.model)
    predicted = [predict(c, platform, source, args.seed, phases=True) for c in configs]
    t = phase_table(real, predicted)
    pd.set_option("display.width", 200)
    print(f"HPL's phases (s; the largest time of any process; real: median of the runs), seed {args.seed}")
    print(t.round({"real_s": 3, "real_min_s": 3, "real_max_s": 3, "emulated_s": 3, "difference_s": 3,
                   "difference_pct": 1}).to_string(index=False))


if __name__ == "__main__":
    run_main(main)

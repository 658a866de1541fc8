"""E21: the same validate run's models fitted on the calibration before the real runs, after, and both."""
import sys, statistics
from pathlib import Path
import pandas as pd
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource, predict
from hplsim.calibrate.hpl_designs import default_configs
from hplsim.models.time_share import fit_models
from hplsim.report.validation import describe
base = Path(sys.argv[1]); c = base / "calibration"
real = pd.read_csv(base / "validation.csv").set_index("configuration")
platform = load_platform(base / "platform.yaml")
variants = {"before": [c / "dgemm.zip"], "after": [c / "after-real-runs/dgemm.zip"],
            "both": [c / "dgemm.zip", c / "after-real-runs/dgemm.zip"]}
for name, dg in variants.items():
    out = Path(f"/tmp/e22/{base.name}-{name}.yaml")
    fit_models(dg + [c / "dtrsm.zip"], c / "trace.zip", out, seed=0)
    model = ModelSource.from_path(out)
    errs = {}
    for cf in default_configs():
        r = real.loc[describe(cf)]
        errs[describe(cf)] = 100 * (predict(cf, platform, model, 0, 600).gflops / r.real_gflops_median - 1)
    e = pd.Series(errs); g = e.index.str[-3:]
    print(f"{base.name} {name:7s}: median|e| {e.abs().median():.1f} max {e.abs().max():.1f} mean {e.mean():+.1f}  "
          f"1x2 {e[g=='1x2'].mean():+.1f} [{e[g=='1x2'].min():+.1f}, {e[g=='1x2'].max():+.1f}]  "
          f"2x1 {e[g=='2x1'].mean():+.1f} [{e[g=='2x1'].min():+.1f}, {e[g=='2x1'].max():+.1f}]")

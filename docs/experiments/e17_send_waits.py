"""Lab notebook E17 (docs/validation.md): in a traced real HPL run on 1×Q (`hplsim run-real
--trace --out T.zip`), how long each panel's owner waits between copying the panel for its
broadcast (HPL_dlacpy) and starting its update (HPL_dlaswp00N): its blocking MPI_Send of
the panel, which ends when the other rank has probed, matched and received it.

    python docs/experiments/e17_send_waits.py T.zip
"""

import sys
import zipfile

import pandas as pd

with zipfile.ZipFile(sys.argv[1]) as z:
    calls = pd.read_csv(z.open("results/kernels.csv"))
    runs = pd.read_csv(z.open("results/hpl.csv"))
calls = calls[calls["function"] != "HPL_pdgesv"]
for (order, rank), k in calls.groupby(["order", "rank"]):
    k = k.sort_values("start")
    start, end, fn = k["start"].to_numpy(), (k["start"] + k["duration"]).to_numpy(), k["function"].to_numpy()
    waits = [start[i] - end[i - 1] for i in range(1, len(k)) if fn[i - 1] == "HPL_dlacpy" and fn[i] == "HPL_dlaswp00N"]
    run = runs[runs["order"] == order].iloc[0]
    print(f"{run['label']} N={run['n']} NB={run['nb']} DEPTH={run['depth']} rank {rank}: "
          f"{len(waits)} sends, {1e3 * sum(waits):.1f} ms waiting ({', '.join(f'{1e3 * w:.1f}' for w in waits)})")

"""E91: RingRong's durations as the authors' notebook summarises them
(`remote_calibration.ipynb` @ d359ae6, cells 3, 36, 42, 45): each rank's lines in order,
sub_id = index // 2, op_kind = sub_id % 2 (0 recv-send, 1 send-recv), 'remote' = ranks
{0, 32} recv-send or {31, 63} send-recv (rank 0's labels included as the notebook gives
them); per message size the mean of the pair (send + receive), of the sends and of the
receives over the 'remote' rows, and of the other ('loopback') pairs.

usage: e91_notebook_estimator.py FOLDER   (the out_*.txt of e73_ringrong.c)"""
from __future__ import annotations

import collections
import glob
import statistics
import sys


def notebook_means(folder: str) -> dict[int, dict[str, float]]:
    """Per size: 'pair', 'send', 'recv' (remote) and 'loopback' (pairs), in seconds."""
    rows_by = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in glob.glob(folder + "/out_*.txt"):
        rows = [line.split() for line in open(f)]
        me = int(rows[0][0])
        for sub in range(len(rows) // 2):
            a, b = rows[2 * sub], rows[2 * sub + 1]
            kind = "recv-send" if sub % 2 == 0 else "send-recv"
            remote = (me in (0, 32) and kind == "recv-send") or (me in (31, 63) and kind == "send-recv")
            t = {r[3]: float(r[5]) for r in (a, b)}
            d = rows_by[int(a[2])]
            if remote:
                d["pair"].append(t["send"] + t["recv"])
                d["send"].append(t["send"])
                d["recv"].append(t["recv"])
            else:
                d["loopback"].append(t["send"] + t["recv"])
    return {size: {k: statistics.mean(v) for k, v in d.items()} for size, d in rows_by.items()}


if __name__ == "__main__":
    print("size     remote: pair  send   recv (mean, µs)   loopback pair")
    for size, m in sorted(notebook_means(sys.argv[1]).items()):
        print(f"{size:>8} {m['pair'] * 1e6:10.1f} {m['send'] * 1e6:7.1f} {m['recv'] * 1e6:7.1f}   "
              f"{m['loopback'] * 1e6:10.1f}")

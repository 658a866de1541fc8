"""The notebook's estimator (remote_calibration.ipynb @ d359ae6, cells 3, 36, 42, 45):
per-rank lines in order, sub_id = index // 2, op_kind = sub_id % 2 (0 recv-send, 1
send-recv), 'remote' = ranks {0,32} recv-send or {31,63} send-recv; per size the mean
of the pair (send + recv), of the sends and of the recvs over 'remote' rows."""
import glob, collections, statistics, sys
pairs, sends, recvs = (collections.defaultdict(list) for _ in range(3))
lpairs = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + "/out_*.txt"):
    rows = [line.split() for line in open(f)]
    me = int(rows[0][0])
    for sub in range(len(rows) // 2):
        a, b = rows[2 * sub], rows[2 * sub + 1]
        kind = "recv-send" if sub % 2 == 0 else "send-recv"
        remote = (me in (0, 32) and kind == "recv-send") or (me in (31, 63) and kind == "send-recv")
        size = int(a[2])
        t = {r[3]: float(r[5]) for r in (a, b)}
        (pairs if remote else lpairs)[size].append(t["send"] + t["recv"])
        if remote:
            sends[size].append(t["send"]); recvs[size].append(t["recv"])
print("size     remote: pair  send   recv (mean, µs)   loopback pair")
for s in sorted(pairs):
    m = lambda v: statistics.mean(v) * 1e6
    print(f"{s:>8} {m(pairs[s]):10.1f} {m(sends[s]):7.1f} {m(recvs[s]):7.1f}   {m(lpairs[s]):10.1f}")

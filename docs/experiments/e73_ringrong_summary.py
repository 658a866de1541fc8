"""E73: per message size, the median simulated duration of each of RingRong's four timed
calls, between nodes and within one (the output of e73_ringrong.c in folder argv[1])."""
import glob, collections, statistics, sys
d = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + "/out_*.txt"):
    for line in open(f):
        me, peer, size, op, what, t = line.split()
        me, peer = int(me), int(peer)
        where = "remote" if me // 32 != peer // 32 else "local"
        d[(where, op, what, int(size))].append(float(t))
for where in ("remote", "local"):
    print(where, "size  send-ring(to busy)  send-rong(to waiting)  recv-ring  recv-rong  [µs, median]")
    for size in sorted({k[3] for k in d}):
        vals = [statistics.median(d[(where, op, what, size)]) * 1e6 for op, what in
                (("send", "ring"), ("send", "rong"), ("recv", "ring"), ("recv", "rong"))]
        print(f"  {size:>8} " + " ".join(f"{v:10.1f}" for v in vals))

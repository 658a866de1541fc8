"""E70 addendum: how far a Dahu 16x16 slice (N = 10,000) moves when smpi/iprobe changes by one part
in a million, with SimGrid's probes (argv[1] off) or the counted ones (on); argv[2:]: B,NB,D,S."""
import os, re, sys, dataclasses
sys.path.insert(0, "benchmarks")
from exchanges_fidelity import _dahu
from hplsim.hpl.config import HplConfig
from hplsim.predict import predict
preset, plat, model = _dahu()
os.environ["HPLSIM_PROBE_COUNTS"] = sys.argv[1]
for label in sys.argv[2:]:
    b, nb, d, s = map(int, label.split(","))
    config = HplConfig(**{**preset.config(10000).as_dict(), "p": 16, "q": 16, "bcast": b, "depth": d, "swap": s})
    out = []
    for scale in (1.0, 1 + 1e-6, 1 - 1e-6):
        xml = re.sub(r'(id="smpi/iprobe" value=")([^"]+)"', lambda m: f'{m.group(1)}{float(m.group(2)) * scale!r}"', plat.xml)
        p2 = dataclasses.replace(plat, xml=xml)
        r = predict(config, p2, model, seed=1)
        out.append(r.gflops)
    print(label, "counts", sys.argv[1], [f"{g:.3f}" for g in out], [f"{100*(g/out[0]-1):+.3f}%" for g in out[1:]], flush=True)

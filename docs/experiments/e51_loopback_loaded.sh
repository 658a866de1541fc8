#!/bin/bash
# E51: the preset with Dahu's network as the authors measured it under load in 2020
# (their RingRong calibration: one ping-pong at a time around a ring of 64 ranks on two
# nodes while every other rank runs dgemm; Ezibenroc/calibration_analysis
# dahu/mpi/remote_calibration.ipynb @ d359ae6, its printed fits):
#  - lo3.xml: the nodes' loopback at the loaded intra-node rate, one way 3.30e-10 s/B for
#    16 kB - 6 MB (3.03 GB/s). SimGrid 3.32 multiplies the loopback by smpi/bw-factor too
#    (0.9868 beyond 63,305 B), so the link is set to 3.03 / 0.9868 = 3.07 GB/s.
#  - lo3cap.xml: lo3.xml plus the loaded inter-node rate of one flow (bw factor 0.316 of
#    12.5 GB/s for 64 kB - 6 MB: 3.95 GB/s) as a per-flow cap, SimGrid's TCP window bound
#    network/TCP-gamma / (2 x 0.2 us route latency), times the bw-factor 0.9868:
#    gamma = 3.95e9 / 0.9868 x 0.4e-6 = 1,601 B (none on the loopback: latency 0).
# About 6-45 min of one core per run here; run at most two at once.
set -e
H=${HPLSIM:-hplsim}
OUT=${1:-/tmp/e51}
mkdir -p "$OUT" && cd "$OUT"
# both written by hplsim.presets.dahu.loaded_platform_xml from the published platform
${PYTHON:-python} - <<'PY'
from hplsim.presets import dahu
published = dahu.PUBLISHED_PLATFORM_XML.read_text()
open("lo3.xml", "w").write(dahu.loaded_platform_xml(published, per_flow_cap=False))
open("lo3cap.xml", "w").write(dahu.loaded_platform_xml(published))
PY
run() {  # NAME PLATFORM [predict options]: one run, its JSON in NAME.json
  name=$1 platform=$2; shift 2
  $H predict --preset dahu --platform "$platform.xml" "$@" --seed 1 --json > "$name.json"
}
for p in lo3 lo3cap; do
  run $p-50k $p -N 50000
  run $p-100k $p -N 100000
  for d in 0 1; do run $p-250k-d$d $p -N 250000 --bcast 2 --depth $d --swap 0; done
done
# other configurations of the factorial, on the loaded network with both rates
run lo3cap-250k-b0d0 lo3cap -N 250000 --bcast 0 --depth 0 --swap 0
run lo3cap-250k-b0d1 lo3cap -N 250000 --bcast 0 --depth 1 --swap 0
run lo3cap-250k-b5 lo3cap -N 250000 --bcast 5 --depth 1 --swap 0
run lo3cap-250k-b5s1 lo3cap -N 250000 --bcast 5 --depth 1 --swap 1  # stopped unfinished in E51

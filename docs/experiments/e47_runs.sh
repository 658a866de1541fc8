#!/bin/bash
# E47: a per-flow cap on inter-node messages (a loaded node moves one MB-sized message at a
# fraction of its link; 32 at once still share the link's 12.5 GB/s), as a sensitivity:
# DEPTH 0 against DEPTH 1 at N = 250,000 (BCAST 2, SWAP 0) on E42's median CPUs. SimGrid
# 3.32 scales a flow's shared rate by smpi/bw-factor (no cap); its TCP window bound is a
# per-flow cap: network/TCP-gamma / (2 x route latency), route latency 0.2 us between two
# nodes, none on the loopback. gamma 1250 B: 3.125 GB/s = 0.25 of the link, a round value
# inside the range the authors measured on the loaded machine in 2020 (0.10-0.40 for
# MB-sized messages, lab notebook E46), not a fit. About 15-30 min of one core per run.
set -e
H=${HPLSIM:-hplsim}
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e47}
GAMMA=${GAMMA:-1250}
mkdir -p "$OUT" && cd "$OUT"
XML=$($PY -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
MODEL=${XML%platform.xml}model.yaml
sed "s|<config id=\"General\">|<config id=\"General\">\n        <prop id=\"network/TCP-gamma\" value=\"$GAMMA\"/>|" "$XML" > cap.xml
$PY "$HERE/model_variants.py" median "$MODEL" median.yaml
for depth in 0 1; do
  $H predict --preset dahu --platform cap.xml --model median.yaml -N 250000 --bcast 2 --depth $depth --swap 0 --seed 1 --json > cap-median-d$depth.json &
done
wait

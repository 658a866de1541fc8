#!/bin/bash
# E61: does the spread-roll's stall with look-ahead grow with the CPUs' spread? E57's slice
# (16 nodes x 8 ranks, N = 8,000) on median CPUs, the 2019 CPUs, jan2020's and three made
# spreads, four seeds; the full grid at N = 50,000 on median and jan2020 CPUs; jan2020 at
# N = 250,000 with a second seed and its DEPTH 0 binary exchange. All on E52's platform
# (no per-message cost). The slice takes ~15 min of one core, each 50,000 run 10-27 min,
# the 250,000 runs 40 min (DEPTH 0) and ~2 h (the roll with look-ahead); two at once.
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e61}
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${DATA:-$ROOT/reference}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$OUT/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"
# node 6 is the slice's sixth process row; `*:0` every even column's CPU
$PY "$HERE/model_variants.py" scaled "$OUT/median.yaml" "$OUT/parity.yaml" '*:0=1.055'
$PY "$HERE/model_variants.py" scaled "$OUT/median.yaml" "$OUT/node6.yaml" '6:*=1.108'
$PY "$HERE/model_variants.py" scaled "$OUT/median.yaml" "$OUT/cpu6.yaml" '6:0=1.108'
cd "$OUT"
S="$PY $HERE/e61_roll_stall.py"
$S out e52.xml median=median.yaml y2019="$MODEL" jan2020=jan2020.yaml > e61a.out
$S out e52.xml parity=parity.yaml node6=node6.yaml cpu6=cpu6.yaml > e61b.out
$S --seeds 1,2,3,4 out e52.xml median=median.yaml cpu6=cpu6.yaml node6=node6.yaml parity=parity.yaml \
   jan2020=jan2020.yaml y2019="$MODEL" > e61c.out
$S --report out/t-median-1-1 out/t-node6-1-1 out/t-cpu6-1-1 out/t-jan2020-1-1 > e61d.out
H="${HPLSIM:-hplsim} predict --preset dahu --platform $OUT/e52.xml --json"
for m in median jan2020; do for s in 1 0; do
  $H -N 50000 --model "$OUT/$m.yaml" --bcast 2 --depth 1 --swap $s --seed 1 > "m50_${m}_2,1,$s.json"
done; done
$H -N 250000 --model "$OUT/jan2020.yaml" --bcast 2 --depth 1 --swap 1 --seed 2 > "j52_2,1,1_s2.json" &
$H -N 250000 --model "$OUT/jan2020.yaml" --bcast 2 --depth 0 --swap 0 --seed 1 > "j52_2,0,0.json"
wait
# Scouting at the end of the stop (median CPUs, DEPTH 1, binary exchange then roll; the
# first pair on the CLI's default PFACT 2 / RFACT 1, not Dahu's 1 / 2):
for s in 0 1; do
  ${HPLSIM:-hplsim} predict -N 125000 -P 16 -Q 8 --nb 128 --bcast 2 --depth 1 --swap $s --seed 1 \
    --model median.yaml --platform e52.xml --ranks-per-host 8 --json > "c125_median_$s.json"
  ${HPLSIM:-hplsim} predict -N 62500 -P 8 -Q 32 --nb 128 --pfact 1 --rfact 2 --bcast 2 --depth 1 --swap $s \
    --seed 1 --model median.yaml --platform e52.xml --ranks-per-host 32 --json > "d62_median_$s.json"
done

#!/bin/bash
# E62: which grids make the spread-roll lose with look-ahead, and what holds a forward made
# inside the roll. Median CPUs on E52's platform (no per-message cost), Dahu's PFACT 1 /
# RFACT 2, BCAST 2, DEPTH 1, one process row per node (--ranks-per-host Q), seed 1; binary
# exchange (SWAP 0) against the spread-roll (SWAP 1). Each run 2-13 min of one core, two at
# once; the traced 32 x 16 pair ~20 min; jan2020 at N = 250,000 with a trace ~2 h.
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e62}
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${DATA:-$ROOT/reference}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$OUT/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"
$PY "$HERE/model_variants.py" hostmean "$OUT/jan2020.yaml" "$OUT/jan2020_hostmean.yaml"
cd "$OUT"
H="${HPLSIM:-hplsim} predict --nb 128 --pfact 1 --rfact 2 --bcast 2 --depth 1 --platform e52.xml --json"
grid() {  # P Q N MODEL SEED [trace]
  for s in 0 1; do
    extra=""; [ -n "$6" ] && extra="--trace t-$1x$2-$3-$4-$s --trace-panels 30"
    $H -P $1 -Q $2 -N $3 --ranks-per-host $2 --model $4.yaml --swap $s --seed $5 $extra > "g_$4_$1x$2_$3_${s}_seed$5.json" &
  done
  wait
}
grid 32 4 50000 median 1
grid 32 8 50000 median 1
grid 32 16 50000 median 1 trace
grid 16 32 25000 median 1
grid 32 16 50000 median 2
grid 32 16 50000 jan2020 1
grid 32 16 50000 jan2020_hostmean 1
for s in 1 0; do
  ${HPLSIM:-hplsim} predict --preset dahu --platform e52.xml --model jan2020.yaml -N 250000 --bcast 2 --depth 1 \
    --swap $s --seed 1 --trace t250-jan2020-1-$s --trace-panels 30 --json > "t250_jan2020_2,1,$s.json" &
done
wait
$PY "$HERE/e62_forwards.py" t-32x16-50000-median-1 t-32x16-50000-median-0 t250-jan2020-1-1 t250-jan2020-1-0 > e62.out

#!/bin/bash
# E63: what HPL's update pieces (m x NB x NB, one call each while the next panel's
# broadcast is pending) cost per call, measured here against a big call and against a law
# of the Dahu calibrations' form fitted on their kind of design; then the Dahu emulation
# with those pieces freed of the law's m*k charge (a bound), jan2020 CPUs on E52's platform
# without the per-message cost, N = 250,000, binary exchange and spread-roll with
# look-ahead (the roll ~1.8 h, the binary exchange ~1 h, two at once).
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e63}
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${DATA:-$ROOT/reference}
HPLSIM=${HPLSIM:-hplsim}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
cd "$OUT"
$PY "$HERE/e63_pieces.py" design mixed.csv
$HPLSIM calibrate dgemm --experiment mixed.csv --warmup 2 --seed 54 --out mixed.zip --no-progress
$PY "$HERE/e63_pieces.py" analyse mixed.zip > e63_pieces.out
$PY "$HERE/e63_pieces.py" alone alone.csv   # HPL's shapes only, on one core (in E63 a simulation ran on the other)
$HPLSIM calibrate dgemm --experiment alone.csv --cores 1 --warmup 2 --seed 55 --out alone.zip --no-progress
$PY "$HERE/e63_pieces.py" analyse alone.zip > e63_alone.out
$PY "$HERE/e63_pieces.py" dahu "$DATA/dahu/dgemm_raw.csv" > e63_dahu.out
$PY "$HERE/model_variants.py" jan2020 "$MODEL" jan2020.yaml "$DATA/dahu/dgemm_calibration_history.csv"
$PY "$HERE/model_variants.py" piecenomk jan2020.yaml jan2020_nomk.yaml 128
for s in 1 0; do
  $HPLSIM predict --preset dahu --platform e52.xml --model jan2020_nomk.yaml -N 250000 --bcast 2 --depth 1 \
    --swap $s --seed 1 --json > "nomk_2,1,$s.json" &
done
wait
# DEPTH 0 on jan2020 without the cost (no update pieces without look-ahead: the same run
# serves both model files)
$HPLSIM predict --preset dahu --platform e52.xml --model jan2020.yaml -N 250000 --bcast 2 --depth 0 \
  --swap 0 --seed 1 --json > "base_2,0,0.json"
# E62's slice with the same variant on the median CPUs
$PY "$HERE/model_variants.py" piecenomk median.yaml median_nomk.yaml 128
for s in 0 1; do
  $HPLSIM predict --nb 128 --pfact 1 --rfact 2 --bcast 2 --depth 1 --platform e52.xml --json -P 32 -Q 16 -N 50000 \
    --ranks-per-host 16 --model median_nomk.yaml --swap $s --seed 1 > "g_median_nomk_32x16_50000_${s}_seed1.json" &
done
wait

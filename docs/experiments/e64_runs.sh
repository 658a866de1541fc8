#!/bin/bash
# E64: is the spread-roll's loss with look-ahead at N = 250,000 the time of the intra-node
# hop that forwards the next panel (8 MB)? jan2020 CPUs on E52's platform without the
# per-message cost, once with the loaded loopback (E52, 3.07 GB/s: E60/E63's runs) and once
# with the idle ping-pong's (the published 18.3 GB/s, a bound), BCAST 2, binary exchange
# and spread-roll with and without look-ahead, seed 1 (walls two at once: the roll
# with look-ahead 1.5 h, the binary exchange 42 min, DEPTH 0 23-60 min); then the reference
# at the classical loaded ping-pong's rate (4.9 GB/s, E51's second source).
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e64}
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${DATA:-$ROOT/reference}
HPLSIM=${HPLSIM:-hplsim}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
IDLE=$($PY -c 'from hplsim.presets import dahu; import re; print(re.search(r"loopback_bw=\"([^\"]+)\"", dahu.PUBLISHED_PLATFORM_XML.read_text()).group(1))')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$OUT/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"
cd "$OUT"
sed "s/loopback_bw=\"[^\"]*\"/loopback_bw=\"$IDLE\"/" e52.xml > lo18.xml
for s in 1 0; do
  $HPLSIM predict --preset dahu --platform lo18.xml --model jan2020.yaml -N 250000 --bcast 2 --depth 1 \
    --swap $s --seed 1 --json > "lo18_2,1,$s.json" &
done
wait
for s in 0 1; do
  $HPLSIM predict --preset dahu --platform lo18.xml --model jan2020.yaml -N 250000 --bcast 2 --depth 0 \
    --swap $s --seed 1 --json > "lo18_2,0,$s.json"
done &
# 268,435,456 B in 0.0553 s over SimGrid's bandwidth factor beyond 63 kB
sed 's/loopback_bw="[^"]*"/loopback_bw="4.92GBps"/' e52.xml > lo49.xml
$HPLSIM predict --preset dahu --platform lo49.xml --model jan2020.yaml -N 250000 --bcast 2 --depth 1 \
  --swap 0 --seed 1 --json > "lo49_2,1,0.json"
wait

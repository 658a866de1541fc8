#!/bin/bash
# E58: the factorial's machine on its own N-sweep (the cooling experiment's 'good' runs):
# E42's median CPUs and the January 2020 per-CPU speeds (model variant jan2020), each on
# the preset's platform (E53's per-message cost) and on E52's (without it); then DEPTH 0
# and longM of the factorial on jan2020. 10-60 min of one core per run; two at once.
# (Median CPUs at N = 250,000 ran in E54 and E55: 25,185 and 25,308 Gflops.)
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/e58}
DATA=${DATA:-$ROOT/reference}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$OUT/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"
$PY "$HERE/e58_cpu_speeds.py" "$DATA" > "$OUT/cpu_speeds.out"
V="$PY $ROOT/benchmarks/dahu_validation.py --machine cooling-good --jobs 2 --store $OUT/v.sqlite"
$V --model "$OUT/median.yaml" -N 50000 100000 > "$OUT/median-cost.out"
$V --model "$OUT/median.yaml" -N 50000 100000 --platform "$OUT/e52.xml" > "$OUT/median-nocost.out"
$V --model "$OUT/jan2020.yaml" -N 50000 250000 > "$OUT/jan2020-cost.out"
$V --model "$OUT/jan2020.yaml" -N 50000 250000 --platform "$OUT/e52.xml" > "$OUT/jan2020-nocost.out"
$PY "$ROOT/benchmarks/factorial.py" --configs 2,0,0 5,1,0 --model "$OUT/jan2020.yaml" --store "$OUT/f.sqlite" > "$OUT/jan2020-factorial.out"

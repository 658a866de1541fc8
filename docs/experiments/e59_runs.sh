#!/bin/bash
# E59: (1) the factorial's spread-roll classes on the January 2020 CPUs (model variant
# jan2020, E58) on the preset's platform (E53's per-message cost): 2,128,0,1 and 5,128,1,1
# (the reference, 2,128,0,0 and 5,128,1,0 ran in E58); (2) the 2019 slow CPUs slowed at every
# kernel, not only dgemm (model variant slowall) at N = 50,000 on E52's platform; (3) the
# preset at sizes of the 2019-03 sweep not run since E53 (75,000, 150,000, 200,000).
# 10-150 min of one core per run; two at once.
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/e59}
DATA=${DATA:-$ROOT/reference}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$OUT/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"
$PY "$HERE/model_variants.py" slowall "$MODEL" "$OUT/slowall.yaml"
$PY "$ROOT/benchmarks/factorial.py" --configs 2,0,1 5,1,1 --model "$OUT/jan2020.yaml" --store "$OUT/f.sqlite" > "$OUT/jan2020-factorial.out"
V="$PY $ROOT/benchmarks/dahu_validation.py --jobs 2 --store $OUT/v.sqlite"
$V --model "$OUT/slowall.yaml" --platform "$OUT/e52.xml" -N 50000 > "$OUT/slowall-nocost.out"
$V -N 75000 150000 200000 > "$OUT/preset.out"

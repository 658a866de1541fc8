#!/bin/bash
# E58: does the factorial's machine (the cooling experiment's 'good' level, 2020-10) pay
# E53's per-message cost? The N-sweep on E42's median CPUs (a stand-in for its CPUs), on
# the preset's platform (with the cost) and on E52's (without), against the 'good' means.
# 12-40 min of one core per run below N = 250,000; two at once. (N = 250,000 ran in E54
# and E55: 25,185 and 25,308 Gflops.)
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/e58}
"$HERE/e52_median_inputs.sh" "$OUT"
SIZES="50000 75000 100000 150000"
V="$PY $ROOT/benchmarks/dahu_validation.py --machine cooling-good --model $OUT/median.yaml --jobs 2 --store $OUT/v.sqlite -N $SIZES"
$V > "$OUT/with-cost.out"
$V --platform "$OUT/e52.xml" > "$OUT/without-cost.out"

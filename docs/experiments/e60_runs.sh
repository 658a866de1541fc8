#!/bin/bash
# E60: (1) is a throttled 2019 node slow at its MPI processing too? Dahu's cluster written
# out host by host (platform_variants.py explicit: the same platform, checked at N = 50,000),
# then each node's loopback and private link divided by its slower CPU's dgemm slowdown
# (slownodes), with the preset's model (N = 50,000 and 250,000) and with slowall's (E59),
# and the loopbacks alone (50,000), on E52's platform (no per-message cost); (2) the
# factorial's classes on the January 2020 CPUs (jan2020, E58) without E53's cost:
# 2,128,1,1 and 0,128,0,0.
# 10-120 min of one core per run; two at once.
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/e60}
DATA=${DATA:-$ROOT/reference}
"$HERE/e52_median_inputs.sh" "$OUT"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$OUT/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"
$PY "$HERE/model_variants.py" slowall "$MODEL" "$OUT/slowall.yaml"
$PY "$HERE/platform_variants.py" explicit "$OUT/e52.xml" "$OUT/e52x.xml"
$PY "$HERE/platform_variants.py" slownodes "$OUT/e52.xml" "$MODEL" "$OUT/e52slow.xml"
$PY "$HERE/platform_variants.py" slownodes "$OUT/e52.xml" "$MODEL" "$OUT/e52slowlo.xml" loopback
V="$PY $ROOT/benchmarks/dahu_validation.py --jobs 2 --store $OUT/v.sqlite"
$V -N 50000 --platform "$OUT/e52x.xml" > "$OUT/explicit.out"
$V -N 50000 250000 --platform "$OUT/e52slow.xml" > "$OUT/slownodes.out"
$V -N 50000 --platform "$OUT/e52slow.xml" --model "$OUT/slowall.yaml" > "$OUT/slownodes-slowall.out"
$V -N 50000 --platform "$OUT/e52slowlo.xml" > "$OUT/slownodes-loopback.out"
$PY "$ROOT/benchmarks/factorial.py" --configs 2,1,1 0,0,0 --platform "$OUT/e52.xml" \
    --model "$OUT/jan2020.yaml" --store "$OUT/f.sqlite" > "$OUT/jan2020-nocost-factorial.out"

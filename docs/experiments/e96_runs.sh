#!/bin/bash
# E96: the 2-ring roll with look-ahead (2,128,1,1) and its reference (2,128,1,0) at
# N = 250,000 on dahu-2020 with the CPUs' spread shrunk toward the median CPU: F = 0 (every
# CPU at the median speed), then F = 0.5. About 35 minutes of one core per F.
set -e
OUT=${1:-/tmp/e96}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
mkdir -p "$OUT"
for f in 0 0.5; do
  "$PY" "$HERE/model_variants.py" shrunk "$REPO/src/hplsim/data/dahu-2020/model.yaml" "$OUT/shrunk$f.yaml" $f
  "$PY" "$REPO/benchmarks/factorial.py" --preset dahu-2020 --model "$OUT/shrunk$f.yaml" --configs 2,1,1 \
    --jobs 1 --store "$OUT/e96-spread.sqlite" --json "$OUT/e96-shrunk$f.json"
done

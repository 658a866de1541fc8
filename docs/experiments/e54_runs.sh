#!/bin/bash
# E54: the long broadcast, DEPTH 0 and the spread-roll without look-ahead on E42's median
# CPUs on the preset's platform (the January 2020 machine had no slow CPU), the factorial's
# configurations not yet run on the preset of E53, and NB = 256 at full scale (the size of
# the factorial's other half; its results are held back, this checks only that such runs
# complete). 20-45 min of one core per run; two at once (two slots), as the notebook's.
# The factorial's other configurations, and 4,0,1, which the session stopped unfinished:
# `benchmarks/factorial.py --swap2-as-swap1 --store OUT/factorial.sqlite`.
set -e
H=${HPLSIM:-hplsim}
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/e54}
mkdir -p "$OUT"
XML=$($PY -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
MODEL=${XML%platform.xml}model.yaml
$PY "$HERE/model_variants.py" median "$MODEL" "$OUT/median.yaml"
FACT="$PY $ROOT/benchmarks/factorial.py --jobs 1 --swap2-as-swap1"
(
  $H predict --preset dahu -N 250000 --nb 256 --bcast 2 --depth 1 --swap 0 --seed 1 --json > "$OUT/p2,256,1,0.json"
  $H predict --preset dahu -N 250000 --nb 256 --bcast 5 --depth 0 --swap 1 --seed 1 --json > "$OUT/p5,256,0,1.json"
  for c in 5,0,0 4,0,0; do
    $FACT --configs $c --store "$OUT/factorial.sqlite" > "$OUT/f$c.out"
  done
  $FACT --configs 2,0,1 --model "$OUT/median.yaml" --store "$OUT/factorial-median.sqlite" > "$OUT/m2,0,1.out"
) &
(
  for c in 5,1,0 2,0,0; do
    $FACT --configs $c --model "$OUT/median.yaml" --store "$OUT/factorial-median.sqlite" > "$OUT/m$c.out"
  done
  $FACT --configs 2,0,1 --store "$OUT/factorial.sqlite" > "$OUT/f2,0,1.out"
) &
wait

#!/bin/bash
# E54: the factorial on the preset of E53 (the loaded network with its per-message cost),
# the long broadcast and DEPTH 0 on E42's median CPUs on the same platform (the January
# 2020 machine had no slow CPU), and NB = 256 at full scale (the size the factorial's other
# half used; its results are held back, this checks only that such runs complete).
# 20-70 min of one core per run; at most two at once (here: two slots in parallel).
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/tmp/e54}
mkdir -p "$OUT"
XML=$($PY -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
MODEL=${XML%platform.xml}model.yaml
$PY "$HERE/model_variants.py" median "$MODEL" "$OUT/median.yaml"
FACT="$PY $ROOT/benchmarks/factorial.py --jobs 1 --swap2-as-swap1"
PREDICT="$PY -c 'import sys; from hplsim.cli import main; sys.exit(main())' predict --preset dahu -N 250000 --seed 1 --json"
(
  eval $PREDICT --nb 256 --bcast 2 --depth 1 --swap 0 > "$OUT/p2,256,1,0.json"
  eval $PREDICT --nb 256 --bcast 5 --depth 0 --swap 1 > "$OUT/p5,256,0,1.json"
  for c in 5,0,0 4,0,0 3,0,1 1,1,0 5,1,1 1,1,1; do
    $FACT --configs $c --store "$OUT/factorial.sqlite" > "$OUT/f$c.out"
  done
) &
(
  for c in 5,1,0 2,0,0; do
    $FACT --configs $c --model "$OUT/median.yaml" --store "$OUT/factorial-median.sqlite" > "$OUT/m$c.out"
  done
  for c in 2,0,1 4,0,1 5,0,1 3,1,0 0,1,1 4,1,1; do
    $FACT --configs $c --store "$OUT/factorial.sqlite" > "$OUT/f$c.out"
  done
) &
wait
$FACT --store "$OUT/factorial.sqlite" --configs 0,0,0 2,0,0 5,1,0 5,0,0 4,0,0 3,0,1 1,1,0 5,1,1 1,1,1 2,0,1 4,0,1 5,0,1 3,1,0 0,1,1 4,1,1

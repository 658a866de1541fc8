#!/bin/bash
# E42: DEPTH 0 against DEPTH 1 at N = 250,000 (BCAST 2, SWAP 0) with every CPU on the
# median of the preset's 64 dgemm laws (no slow or noisy CPU; noise 1.1 % of the mean at
# HPL's update, as dgemm_raw.csv measures at a fixed shape), on the preset's platform and
# without any limit on a node's link (wide.xml, as E41), plus the link-free pair without
# noise (nonoise.yaml, as E41). About 15-30 min of one core per run; at most two at once.
set -e
H=${HPLSIM:-hplsim}
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e42}
mkdir -p "$OUT" && cd "$OUT"
XML=$($PY -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
MODEL=${XML%platform.xml}model.yaml
sed 's/ bw="12.5GBps"/ bw="400GBps"/' "$XML" > wide.xml
$PY "$HERE/model_variants.py" nonoise "$MODEL" nonoise.yaml
$PY "$HERE/model_variants.py" median "$MODEL" median.yaml
for depth in 0 1; do
  $H predict --preset dahu --model median.yaml -N 250000 --bcast 2 --depth $depth --swap 0 --seed 1 --json > median-d$depth.json
  $H predict --preset dahu --platform wide.xml --model median.yaml -N 250000 --bcast 2 --depth $depth --swap 0 --seed 1 --json > wide-median-d$depth.json
  $H predict --preset dahu --platform wide.xml --model nonoise.yaml -N 250000 --bcast 2 --depth $depth --swap 0 --seed 1 --json > wide-nonoise-d$depth.json
done
# the longM broadcast on median CPUs, with and without the link's limit
$H predict --preset dahu --model median.yaml -N 250000 --bcast 5 --depth 1 --swap 0 --seed 1 --json > median-b5.json
$H predict --preset dahu --platform wide.xml --model median.yaml -N 250000 --bcast 5 --depth 1 --swap 0 --seed 1 --json > wide-median-b5.json

#!/bin/bash
# E41: the factorial's DEPTH 0 and longM ratios at N = 250,000 with the preset's platform,
# the loopback at 6 GB/s (lo6.xml) and no limit on a node's link (wide.xml, 32 x 12.5 GB/s).
# About 15-30 min of one core per run here; run at most two at once.
set -e
H=${HPLSIM:-hplsim}  # PYTHON: the interpreter hplsim is installed in (default: python)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e41}
mkdir -p "$OUT" && cd "$OUT"
XML=$(${PYTHON:-python} -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
sed 's/loopback_bw="[^"]*"/loopback_bw="6GBps"/' "$XML" > lo6.xml
sed 's/ bw="12.5GBps"/ bw="400GBps"/' "$XML" > wide.xml
$H predict --preset dahu -N 250000 --bcast 2 --depth 0 --swap 0 --seed 1 --json > preset-d0.json
$H predict --preset dahu -N 250000 --bcast 5 --depth 1 --swap 0 --seed 1 --json > preset-b5.json
$H predict --preset dahu --platform lo6.xml -N 250000 --bcast 2 --depth 0,1 --swap 0 --seed 1 --json > lo6.json
$H predict --preset dahu --platform wide.xml -N 250000 --bcast 2 --depth 0,1 --swap 0 --seed 1 --json > wide.json
$H predict --preset dahu --platform wide.xml -N 250000 --bcast 5 --depth 1 --swap 0 --seed 1 --json > wide-b5.json
# the link-free DEPTH 0 run traced over 40 panels, and without any call noise
$H predict --preset dahu --platform wide.xml -N 250000 --bcast 2 --depth 0 --swap 0 --seed 1 --json --trace trace-wide-d0 --trace-panels 40 > wide-d0-traced.json
${PYTHON:-python} "$HERE/model_variants.py" nonoise "${XML%platform.xml}model.yaml" nonoise.yaml
$H predict --preset dahu --platform wide.xml --model nonoise.yaml -N 250000 --bcast 2 --depth 0 --swap 0 --seed 1 --json > wide-nonoise-d0.json

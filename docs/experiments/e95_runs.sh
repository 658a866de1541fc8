#!/bin/bash
# E95: how full each CPU is while its ranks compute, per class: BCAST 2 with look-ahead and
# the binary exchange or the spread-roll, and DEPTH 0, on E62's 32 x 8 slice (one process
# row per node, 4 ranks a CPU) and on the full grid (16 ranks a CPU), N = 50,000, every
# panel traced. The full grid's spread-roll writes 93 million events: about 11 GB while its
# trace is written (docs/report.md); its simulation about 15 minutes of one core.
set -e
OUT=${1:-/tmp/e95}
HERE=$(cd "$(dirname "$0")" && pwd)
H="${HPLSIM:-hplsim} predict --preset dahu-2020 -N 50000 --bcast 2 --seed 1 --json"
mkdir -p "$OUT" && cd "$OUT"
for c in "1 0" "1 1" "0 0"; do
  set -- $c
  $H -P 32 -Q 8 --ranks-per-host 8 --depth $1 --swap $2 --trace t-32x8-$1$2 > g_32x8_$1$2.json
  $H --depth $1 --swap $2 --trace t-32x32-$1$2 > g_32x32_$1$2.json
done
${PYTHON:-python} "$HERE/e95_occupancy.py" 8 2 t-32x8-10 t-32x8-11 t-32x8-00
${PYTHON:-python} "$HERE/e95_occupancy.py" 32 2 t-32x32-10 t-32x32-11 t-32x32-00

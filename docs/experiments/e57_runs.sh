#!/bin/bash
# E57: the spread-roll with look-ahead on E42's median CPUs and E52's platform (no per-message
# cost), 2ring and longM. Two slots, as the notebook's (at most two simulations at once);
# each ~1.5-2 h of one core on the machine of E57. The slice's figures are the test
# tests/test_mechanisms.py::test_with_look_ahead_the_roll_forwards_the_next_panel_between_its_steps.
set -e
H=${HPLSIM:-hplsim}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e57}
"$HERE/e52_median_inputs.sh" "$OUT"
P="--preset dahu --platform $OUT/e52.xml --model $OUT/median.yaml -N 250000 --seed 1 --json"
$H predict $P --bcast 2 --depth 1 --swap 1 > "$OUT/m52_2,1,1.json" &
$H predict $P --bcast 5 --depth 1 --swap 1 > "$OUT/m52_5,1,1.json" &
wait

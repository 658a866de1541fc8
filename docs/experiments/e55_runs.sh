#!/bin/bash
# E55: the spread-roll without look-ahead with and without E53's per-message cost.
# N = 250,000 on 1,024 ranks; 30-60 min of one core per run; two at once (two slots), as
# the notebook's. The slice's figures (16 nodes x 2 ranks) are the test
# tests/test_mechanisms.py::test_the_per_message_cost_turns_the_spread_rolls_gain_without_look_ahead_into_a_loss.
set -e
H=${HPLSIM:-hplsim}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e55}
"$HERE/e52_median_inputs.sh" "$OUT"
P="-N 250000 --seed 1 --json"
(
  $H predict --preset dahu --bcast 0 --depth 0 --swap 1 $P > "$OUT/p0,0,1.json"
  $H predict --preset dahu --platform "$OUT/e52.xml" --model "$OUT/median.yaml" --bcast 2 --depth 0 --swap 1 $P > "$OUT/m52_2,0,1.json"
) &
(
  $H predict --preset dahu --platform "$OUT/e52.xml" --bcast 2 --depth 0 --swap 1 $P > "$OUT/e52_2,0,1.json"
  $H predict --preset dahu --platform "$OUT/e52.xml" --bcast 1 --depth 0 --swap 1 $P > "$OUT/e52_1,0,1.json"
) &
wait

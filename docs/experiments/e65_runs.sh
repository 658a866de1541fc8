#!/bin/bash
# E65: E64's window test. jan2020 CPUs on E52's platform without the per-message cost,
# the intra-node hop at the authors' classical loaded ping-pong's rate (4.9 GB/s, lo49.xml,
# whose reference 2,128,1,0 E64 ran), N = 250,000, seed 1: the spread-roll with look-ahead
# and DEPTH 0 of the 2-ring (E64's two opposite classes), then the 1-ring without and with
# look-ahead, longM and the spread-roll without look-ahead (walls two at once: the roll with
# look-ahead about 1.5 h, the others 22-75 min).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/e65}
HPLSIM=${HPLSIM:-hplsim}
"$HERE/jan2020_inputs.sh" "$OUT"
cd "$OUT"
# 268,435,456 B in 0.0553 s over SimGrid's bandwidth factor beyond 63 kB (as E64)
sed 's/loopback_bw="[^"]*"/loopback_bw="4.92GBps"/' e52.xml > lo49.xml
run() {
  $HPLSIM predict --preset dahu --platform lo49.xml --model jan2020.yaml -N 250000 --bcast $1 \
    --depth $2 --swap $3 --seed 1 --json > "lo49_$1,$2,$3.json"
}
(run 2 1 1; run 2 0 1) &
for c in "2 0 0" "0 0 0" "5 1 0" "0 1 0"; do run $c; done &
wait

#!/bin/sh
# E99: HPL's per-phase times from the emulation (predict --phases) at the factorial's size on
# dahu-2020, for the reference, the 2-ring's roll with look-ahead and its DEPTH 0 twin: what a
# real Dahu run built with -DHPL_DETAILED_TIMING would be held against. One at a time.
#   sh docs/experiments/e99_phases.sh OUTDIR
set -e
out=$1; mkdir -p "$out"
for c in "1 0" "0 0" "1 1"; do
  set -- $c
  .venv/bin/hplsim predict --preset dahu-2020 -N 250000 --bcast 2 --depth $1 --swap $2 --seed 1 --phases \
    --json -o "$out/phases-2-128-$1-$2.json" > /dev/null
done

#!/bin/sh
# E92: how far one seed's draw of the kernels' noise moves a full-scale Dahu prediction, on
# the platform the presets are to take (E91's candidate), at the two sizes beyond their
# targets at seed 1: `dahu` N = 50,000 and `dahu-2020` N = 150,000. Run from a folder holding
# e91-candidate.xml:  sh docs/experiments/e92_seeds.sh /work/main
set -e
repo=$1
for s in 2 3 4; do
  "$repo/.venv/bin/hplsim" predict --preset dahu -N 50000 --seed $s --platform e91-candidate.xml --json > dahu-50000-$s.json
  "$repo/.venv/bin/hplsim" predict --preset dahu-2020 -N 150000 --seed $s --platform e91-candidate.xml --json > dahu2020-150000-$s.json
done

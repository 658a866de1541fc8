#!/bin/bash
# E49: the detached/async thresholds at PSM2's 64,000 B (the authors' 2019-03 regeneration)
# against the published 8,133 B, Dahu preset at N = 50,000. About 10 min of one core per run.
set -e
H=${HPLSIM:-hplsim}  # PYTHON: the interpreter hplsim is installed in (default: python)
OUT=${1:-/tmp/e49}
mkdir -p "$OUT" && cd "$OUT"
XML=$(${PYTHON:-python} -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
sed -e 's|"smpi/async-small-thresh" value="8133"|"smpi/async-small-thresh" value="64000"|' \
    -e 's|"smpi/send-is-detached-thresh" value="8133"|"smpi/send-is-detached-thresh" value="64000"|' "$XML" > t64k.xml
grep -c 'value="64000"' t64k.xml | grep -qx 2  # both thresholds replaced, or stop
$H predict --preset dahu -N 50000 --seed 1 --json > base50k.json
$H predict --preset dahu --platform t64k.xml -N 50000 --seed 1 --json > t64k50k.json

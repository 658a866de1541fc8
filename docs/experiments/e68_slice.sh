#!/bin/bash
# E68: the shared-loopback hypothesis on a slice (4 Dahu nodes x 32 ranks, P = 4, Q = 32,
# N = 40,000: a panel of 10 MB, as at full scale's 8 MB). Inputs into $1: the January 2020
# CPUs (model_variants.py jan2020), the preset's platform written out host by host, the
# idle intra-node hop, and shared loopbacks (SHARED aggregate + FATPIPE cap at the idle rate).
# Prints one line per platform and configuration: Gflops, HPL time.
set -e
OUT=$1; mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}; E=$HERE/platform_variants.py
P=$ROOT/src/hplsim/data/dahu/platform-loaded.xml
IDLE=18.348422228142724GBps   # the published loopback (Dahu's idle ping-pong)
PYTHONPATH=$HERE $PY $HERE/model_variants.py jan2020 $ROOT/src/hplsim/data/dahu/model.yaml $OUT/jan2020.yaml \
  $ROOT/reference/dahu/dgemm_calibration_history.csv
$PY $E explicit $P $OUT/explicit.xml
sed "s/loopback_bw=\"3.07GBps\"/loopback_bw=\"$IDLE\"/" $P > $OUT/idle.xml
for a in ${AGGREGATES:-18.348422228142724 9.174211114071362 6.14}; do
  $PY $E sharedloopback $P $OUT/shared$a.xml ${a}GBps $IDLE
done
for plat in ${PLATFORMS:-loaded explicit idle $(cd $OUT && ls shared*.xml | sed 's/.xml//')}; do
  xml=$OUT/$plat.xml; [[ $plat == loaded ]] && xml=$P
  for c in "2 1 0" "2 0 0" "2 1 1" "2 0 1"; do set -- $c
    g=$($ROOT/.venv/bin/hplsim predict --platform $xml --model $OUT/jan2020.yaml -N 40000 --nb 128 -P 4 -Q 32 \
        --pfact 1 --rfact 2 --nbmin 2 --ndiv 2 --bcast $1 --depth $2 --swap $3 --seed 1 --json \
        | $PY -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["gflops"], d["time_s"])')
    echo "$plat $1,128,$2,$3 $g"
  done
done

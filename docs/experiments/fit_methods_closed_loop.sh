#!/bin/bash
# select vs time-share on one closed loop: validate (time-share), then the same archives refitted
set -e
H=${HPLSIM:-hplsim}
E=${1:-/tmp/fit-methods}
cd "$(dirname "$E")"
$H validate -N 4000 --nb 128 -P 1,2 -Q 2,1 --repeat 2 --seed 0 --out $E -q > $E.validate.txt 2>&1 || { cat $E.validate.txt; exit 1; }
C=$E/calibration
BLAS="$C/pass-0/dgemm.zip $C/pass-0/dtrsm.zip $C/pass-1/dgemm.zip $C/pass-1/dtrsm.zip $C/pass-2/dgemm.zip $C/pass-2/dtrsm.zip"
TRACES="$C/pass-0/trace.zip $C/pass-1/trace.zip $C/pass-2/trace.zip"
$H fit --method time-share $TRACES -o $E/ts-traced.yaml 2> $E/fit-ts-traced.txt
$H fit --method time-share $BLAS $C/pass-0/trace.zip --kernel dgemm,dtrsm --base $E/ts-traced.yaml -o $E/ts.yaml 2> $E/fit-ts.txt
$H fit --method select --per none $BLAS $C/pass-0/trace.zip --kernel dgemm,dtrsm --base $E/ts-traced.yaml -o $E/select.yaml --json > $E/fit-select.json 2> $E/fit-select.txt
$H fit --method select --per none --option M2,N0 $BLAS $C/pass-0/trace.zip --kernel dgemm,dtrsm --base $E/ts-traced.yaml -o $E/select-n0.yaml 2> $E/fit-select-n0.txt
for m in ts select select-n0; do
  for g in "1 2" "2 1"; do
    set -- $g
    $H predict -N 4000 --nb 128 -P $1 -Q $2 --platform $E/platform.yaml --model $E/$m.yaml --json > $E/pred-$m-$1x$2.json 2>/dev/null
  done
done
echo done

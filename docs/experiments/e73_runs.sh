#!/bin/sh
# E73: the RingRong calibration's structure simulated in SMPI on the Dahu preset's platform,
# with and without E53's per-message intercepts. Run from an empty folder:
#   sh docs/experiments/e73_runs.sh /work/main
set -e
repo=$1
smpicc -O2 -o rr "$repo/docs/experiments/e73_ringrong.c"
"$repo/.venv/bin/python" -c "
from hplsim.presets.dahu import loaded_platform_xml, PUBLISHED_PLATFORM_XML, PLATFORM_XML
open('noicpt.xml', 'w').write(loaded_platform_xml(PUBLISHED_PLATFORM_XML.read_text(), intercepts=False))
open('icpt.xml', 'w').write(PLATFORM_XML.read_text())"
# 64 ranks on two nodes, as the calibration (ranks 31 -> 32 and 63 -> 0 between nodes)
(for i in $(seq 32); do echo dahu-0.grid5000.fr; done; for i in $(seq 32); do echo dahu-1.grid5000.fr; done) > hostfile
for dgemm in 216e-6 190e-6; do
  for plat in noicpt icpt; do
    for progressed in 0 1; do
      d=run-$dgemm-$plat-$progressed; mkdir -p $d
      (cd $d && smpirun -np 64 -platform ../$plat.xml -hostfile ../hostfile --cfg=smpi/wtime:0 \
         --cfg=smpi/simulate-computation:no --log=root.thres:warning ../rr $dgemm $progressed > log 2>&1)
      echo "== dgemm $dgemm s, $plat, progressed between nodes: $progressed"
      "$repo/.venv/bin/python" "$repo/docs/experiments/e73_ringrong_summary.py" $d
    done
  done
done

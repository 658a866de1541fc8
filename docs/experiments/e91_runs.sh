#!/bin/sh
# E91: RingRong's two versions simulated on the Dahu preset's platform without E53's
# per-message intercepts, summarised with the authors' notebook's own estimator (the mean
# per size of 'remote' send+receive pairs, remote_calibration.ipynb @ d359ae6). Run from an
# empty folder:  sh docs/experiments/e91_runs.sh /work/main
set -e
repo=$1
smpicc -O2 -o rr "$repo/docs/experiments/e73_ringrong.c"
"$repo/.venv/bin/python" -c "
from hplsim.presets.dahu import loaded_platform_xml, PUBLISHED_PLATFORM_XML
open('noicpt.xml', 'w').write(loaded_platform_xml(PUBLISHED_PLATFORM_XML.read_text(), intercepts=False))"
(for i in $(seq 32); do echo dahu-0.grid5000.fr; done; for i in $(seq 32); do echo dahu-1.grid5000.fr; done) > hostfile
for busy in 0 1; do
  for progressed in 0 1; do
    d=run-$busy-$progressed; mkdir -p $d
    (cd $d && smpirun -np 64 -platform ../noicpt.xml -hostfile ../hostfile --cfg=smpi/wtime:0 \
       --cfg=smpi/simulate-computation:no --log=root.thres:warning ../rr 216e-6 $progressed $busy > log 2>&1)
    echo "== reply's receive busy-waits: $busy; progressed between nodes: $progressed"
    "$repo/.venv/bin/python" "$repo/docs/experiments/e91_notebook_estimator.py" $d
  done
done

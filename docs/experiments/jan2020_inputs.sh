#!/bin/bash
# Writes into $1 the inputs of E60-E66 (e65_runs.sh and e66_runs.sh call it): E52's
# platform without the per-message cost (e52.xml), E42's median CPUs (median.yaml) and
# the January 2020 CPUs of E58 (jan2020.yaml).
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${DATA:-$HERE/../../reference}
"$HERE/e52_median_inputs.sh" "$1"
MODEL=$($PY -c 'from hplsim.presets import dahu; print(dahu.MODEL_FILE)')
$PY "$HERE/model_variants.py" jan2020 "$MODEL" "$1/jan2020.yaml" "$DATA/dahu/dgemm_calibration_history.csv"

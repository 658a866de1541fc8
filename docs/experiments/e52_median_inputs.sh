#!/bin/bash
# Writes into $1 the inputs of E55 and E57: E52's platform (the preset's without the
# per-message cost, byte for byte the file E52 ran) and E42's median CPUs (median.yaml).
set -e
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
$PY -c 'from hplsim.presets import dahu; print(dahu.loaded_platform_xml(dahu.PUBLISHED_PLATFORM_XML.read_text(), intercepts=False), end="")' > "$1/e52.xml"
XML=$($PY -c 'from hplsim.presets import dahu; print(dahu.PUBLISHED_PLATFORM_XML)')
$PY "$HERE/model_variants.py" median "${XML%platform.xml}model.yaml" "$1/median.yaml"

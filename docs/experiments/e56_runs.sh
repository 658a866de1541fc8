#!/bin/bash
# E56: which part of E53's per-message cost the N-sweep needs, and what the cost does to the
# spread-roll with look-ahead at full scale. Two slots, as the notebook's (at most two
# simulations at once): N = 50,000 takes ~12 min of one core, N = 250,000 with the
# spread-roll and look-ahead ~1.5-2 h on the machine of E56.
set -e
H=${HPLSIM:-hplsim}
PY=${PYTHON:-python}
OUT=${1:-/tmp/e56}
mkdir -p "$OUT"
# the preset's platform without the loopback's intercept: the remote per-message cost only
$PY - "$OUT/remote_only.xml" <<'EOF'
import re, sys
from hplsim.presets import dahu
xml = dahu.loaded_platform_xml(dahu.PUBLISHED_PLATFORM_XML.read_text())
open(sys.argv[1], "w").write(re.sub(r'loopback_lat="[^"]*"', 'loopback_lat="0.0us"', xml, count=1))
EOF
P="--seed 1 --json"
(
  $H predict --preset dahu -N 250000 --bcast 2 --depth 1 --swap 1 $P > "$OUT/p2,1,1.json"
) &
(
  $H predict --preset dahu --platform "$OUT/remote_only.xml" -N 50000 $P > "$OUT/ro_50k.json"
  $H predict --preset dahu -N 250000 --bcast 5 --depth 1 --swap 1 $P > "$OUT/p5,1,1.json"
  $H predict --preset dahu -N 250000 --bcast 3 --depth 1 --swap 0 $P > "$OUT/p3,1,0.json"
) &
wait

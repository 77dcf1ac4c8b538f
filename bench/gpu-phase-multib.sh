#!/usr/bin/env bash
# The two-GPU `gdio load` rows of bench/multigpu-h200.py with the CLI built before a change
# (.dev/before/gdio), to set beside the `multi` phase's rows of the build after it (run `multi`
# first: it writes the checkpoint). MGB_ROWS picks the rows (default gdio-cli,gdio-cli-spread).
# usage (through bench/gpu-session.sh multib): bench/gpu-phase-multib.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/multib}; mkdir -p "$out"
python3 bench/multigpu-h200.py --gdio .dev/before/gdio --out "$out" --size-gib "${ST_GIB:-16}" \
  --reps "${MG_REPS:-2}" --rows "${MGB_ROWS:-gdio-cli,gdio-cli-spread}" 2>&1 | grep -v DEBUG

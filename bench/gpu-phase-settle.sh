#!/usr/bin/env bash
# Does `gdio load` of the tmpfs checkpoint run slower right after another loader's process
# (InstantTensor, buffered or O_DIRECT) than on a quiet machine, and does waiting help? The
# checkpoint of bench/safetensors-h200.py (SETTLE_GIB GiB, written if missing); per rep: two
# loads alone, then each peer followed at once by a load, then the peer, SETTLE_WAIT s, a load.
# vmstat runs beside it (vmstat.txt) to show what the machine does after a peer exits.
# usage (through bench/gpu-session.sh settle): bench/gpu-phase-settle.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/settle}; mkdir -p "$out"
GDIO=${GDIO:-$PWD/.dev/bin/gdio}
. bench/gpu-phase-lib.sh
gdio_wheel_on_path
ensure_checkpoint "${SETTLE_GIB:-16}" "$out"
d=/dev/shm/gdio-st
files=$(ls $d/model-*.safetensors)
vmstat -t 1 >"$out/vmstat.txt" 2>&1 &
vm=$!
load() { # label
  local j
  j=$("$GDIO" load "$d/model.safetensors.index.json" --target gpu:0 --json 2>>"$out/stderr.txt" | grep '^{' | tail -1)
  echo "$(date +%T.%N | cut -c1-12) gdio load $1: $(echo "$j" | python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['checkpoint_bytes']/d['seconds']/1e9:.2f} GB/s (warm-up {d['warm_seconds']*1e3:.1f} ms)\")")"
}
peer() { # kind
  echo "$(date +%T.%N | cut -c1-12) $1: $(python3 bench/safetensors_peer.py "$1" $files 2>>"$out/stderr.txt" | grep '^{' | tail -1 | python3 -c "import json,sys; print(f\"{json.load(sys.stdin)['gbps']:.2f} GB/s\")")"
}
for rep in $(seq "${SETTLE_REPS:-2}"); do
  echo "== rep $rep"
  load "alone"; load "alone, again"
  for p in instanttensor-buffered instanttensor; do
    peer "$p"; load "right after $p"
    peer "$p"; sleep "${SETTLE_WAIT:-3}"; load "${SETTLE_WAIT:-3} s after $p"
  done
done
kill $vm 2>/dev/null

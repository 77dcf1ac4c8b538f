#!/usr/bin/env bash
# safetensors loads under settings, alternating in one run (issue 10/11 A/B): the checkpoint of
# bench/safetensors-h200.py (LOADAB_GIB GiB, written if missing) from tmpfs and the hot ext4
# page cache, `gdio load` under each of LOADAB_SETTINGS (environment assignments and `gdio load`
# flags such as --requests=3 joined by commas, "GDIO_NONE=1" for the defaults), gdio.safetensors.torch.load_file (gdio-torch, under
# the first setting) and the best peer of each place (InstantTensor; its BUFFERED mode on ext4),
# LOADAB_REPS times. GB/s of checkpoint data, one line per load.
# usage (through bench/gpu-session.sh loadab): bench/gpu-phase-loadab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/loadab}; mkdir -p "$out"
GDIO=${GDIO:-$PWD/.dev/bin/gdio}
if [ -d .whl ] && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
fi
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl 2>/dev/null
export PYTHONPATH=/tmp/gdsite:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
[ -f /tmp/gdio-st/model.safetensors.index.json ] ||
  python3 bench/safetensors-h200.py --gdio "$GDIO" --out "$out/st" --size-gib "${LOADAB_GIB:-16}" --rows none --peers "" >/dev/null 2>&1
read -ra settings <<<"${LOADAB_SETTINGS:-GDIO_NONE=1 GDIO_COMPLETION_WATCHER=false}"
# GB/s of checkpoint data; for `gdio load`, where its set-up time went (milliseconds).
gb() { python3 -c "
import json,sys; d=json.loads([l for l in sys.stdin if l.startswith('{')][-1]); b=d.get('checkpoint_bytes', d['bytes'])
ms=lambda k: f'{d[k]*1e3:.1f}' if isinstance(d.get(k), (int, float)) else '-'
extra=f\" (open {ms('open_seconds')} ms, alloc {ms('alloc_seconds')}, warm {ms('warm_seconds')}, reads {b/d['transfer_seconds']/1e9:.2f} GB/s)\" if 'transfer_seconds' in d else ''
print(f\"{b/d['seconds']/1e9:.2f}{extra}\")"; }
# The link's limit in this run (pinned host-to-device copies, measured by gdio bench).
echo "pinned host-to-device: $("$GDIO" bench --json --file /dev/shm/gdio-bench-8g.bin --mode read --iterations 1 --io-size 1G --queue-depth 2 2>>"$out/stderr.txt" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d.get('limits'))")"
for rep in $(seq "${LOADAB_REPS:-3}"); do
  for where in /dev/shm/gdio-st /tmp/gdio-st; do
    files=$(ls "$where"/model-*.safetensors)
    [ "$where" = /tmp/gdio-st ] && cat $files >/dev/null
    peer=instanttensor; [ "$where" = /tmp/gdio-st ] && peer=instanttensor-buffered
    echo "rep $rep $where $peer: $(python3 bench/safetensors_peer.py $peer $files 2>>"$out/stderr.txt" | gb)"
    for v in "${settings[@]}"; do
      [ "$where" = /tmp/gdio-st ] && cat $files >/dev/null
      # A setting's --flags go to gdio load, the rest to its environment.
      read -ra parts <<<"${v//,/ }"
      envs=(); flags=()
      for x in "${parts[@]}"; do case $x in --*) flags+=("$x") ;; *) envs+=("$x") ;; esac; done
      echo "rep $rep $where gdio load $v: $(env "${envs[@]}" "$GDIO" load "$where/model.safetensors.index.json" --target gpu:0 --json "${flags[@]}" 2>>"$out/stderr.txt" | gb)"
    done
    echo "rep $rep $where gdio-torch ${settings[0]}: $(env ${settings[0]//,/ } python3 bench/safetensors_peer.py gdio-torch $files 2>>"$out/stderr.txt" | gb)"
  done
done

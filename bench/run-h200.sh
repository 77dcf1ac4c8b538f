#!/usr/bin/env bash
# The benchmark of record on the GPU machine: gdio beside KvikIO in ONE run, on an 8 GiB file of
# random bytes in the page cache of ext4 (/tmp) and tmpfs (/dev/shm), cold reads, and writes.
#
# usage: bench/run-h200.sh [quick|sweep|full]   (from the repository root)
# needs: a gdio release binary at $GDIO (default .dev/bin/gdio or target/release/gdio), and for
# the peers the wheels from ../shared/tools/fetch-peer-wheels in .whl/ (installed to /tmp/site).
# Writes every JSON line to ${OUT:-/tmp/gdio-bench}/results.jsonl and prints a summary table.
set -uo pipefail
mode=${1:-full}
OUT=${OUT:-/tmp/gdio-bench}
mkdir -p "$OUT"
GDIO=${GDIO:-$( [ -x .dev/bin/gdio ] && echo .dev/bin/gdio || echo target/release/gdio )}
SIZE=${SIZE:-8G}
log=$OUT/results.jsonl
: > "$log"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

gd() { # label, args...
  local label=$1; shift
  echo ">> gdio $label: $*" >&2
  "$GDIO" bench --json "$@" 2>>"$OUT/gdio-stderr.log" | python3 -c "import json,sys; d=json.load(sys.stdin); d['label']='$label'; print(json.dumps(d))" >> "$log"
}
gdv() { # label, peer variant, args...
  local label=$1 variant=$2; shift 2
  echo ">> gdio $label: $*" >&2
  "$GDIO" bench --json "$@" 2>>"$OUT/gdio-stderr.log" | python3 -c "import json,sys; d=json.load(sys.stdin); d['label']='$label'; d['peer_variant']='$variant'; print(json.dumps(d))" >> "$log"
}
kv() { # op path threads iters
  echo ">> kvikio $*" >&2
  python3 bench/kvikio_peer.py "$@" >> "$log" 2>>"$OUT/kvikio-stderr.log"
}

"$GDIO" check /tmp /dev/shm > "$OUT/check.txt" 2>&1
for dir in /tmp /dev/shm; do
  f=$dir/gdio-bench-8g.bin
  [ -f "$f" ] || "$GDIO" make-file "$f" --size "$SIZE"
done

case $mode in
sweep)
  for t in 6 8 12; do for bs in 1M 2M 4M; do
    gd "ext4 t$t bounce$bs" --file /tmp/gdio-bench-8g.bin --mode read --iterations 3 --threads $t --task-size 4M --bounce-size $bs --io-size 1G --queue-depth 2
  done; done
  for t in 8 12; do for bs in 2M 4M; do
    gd "tmpfs t$t bounce$bs" --file /dev/shm/gdio-bench-8g.bin --mode read --iterations 3 --threads $t --task-size 4M --bounce-size $bs --io-size 1G --queue-depth 2
  done; done
  for t in 4 8 16; do for bs in 2M 8M; do
    gd "ext4 write t$t bounce$bs" --file /tmp/gdio-bench-8g.bin --out /tmp/gdio-bench-out.bin --overwrite --mode write --iterations 3 --threads $t --task-size 8M --bounce-size $bs --io-size 1G --queue-depth 2
  done; done
  kv read /tmp/gdio-bench-8g.bin 8,16,32 3
  kv read /dev/shm/gdio-bench-8g.bin 16 3
  kv write /tmp/gdio-bench-8g.bin 16 3
  "$GDIO" make-file /tmp/gdio-cold-4g.bin --size 4G
  gd "ext4 cold 4G" --file /tmp/gdio-cold-4g.bin --mode read --iterations 2 --warmup 0 --cold
  ;;
quick)
  gd "ext4 hot" --file /tmp/gdio-bench-8g.bin --mode read --iterations 2
  kv read /tmp/gdio-bench-8g.bin 16 2
  ;;
full)
  R="--io-size 1G --queue-depth 2"
  for dir in /tmp /dev/shm; do
    f=$dir/gdio-bench-8g.bin
    name=$( [ $dir = /tmp ] && echo ext4 || echo tmpfs )
    gd "$name hot" --file "$f" --mode read --iterations 3 $R
    gd "$name hot 8G-request" --file "$f" --mode read --iterations 3 --io-size 8G --queue-depth 1
    kv read "$f" 8,16,32 3
  done
  # Writes into the page cache (fsync timed apart) against KvikIO with its O_DIRECT writes
  # switched off (KvikIO 26.10 writes with O_DIRECT by default: KVIKIO_AUTO_DIRECT_IO_WRITE=1),
  # and O_DIRECT writes against KvikIO's default.
  gd "ext4 write" --file /tmp/gdio-bench-8g.bin --out /tmp/gdio-bench-out.bin --overwrite --mode write --iterations 3 $R
  KVIKIO_AUTO_DIRECT_IO_WRITE=0 kv write /tmp/gdio-bench-8g.bin 8,16,32 3
  gdv "ext4 write direct" _direct --file /tmp/gdio-bench-8g.bin --out /tmp/gdio-bench-out.bin --overwrite --mode write --iterations 3 --direct on $R
  PEER_VARIANT=_direct kv write /tmp/gdio-bench-8g.bin 16 3
  gd "ext4 cold" --file /tmp/gdio-bench-8g.bin --mode read --iterations 2 --warmup 0 --cold $R
  # NVIDIA's own cuFile on this disk, through KvikIO with compat mode OFF (GDS or nothing).
  KVIKIO_COMPAT_MODE=OFF python3 -c "import kvikio; kvikio.CuFile('/tmp/gdio-bench-8g.bin','r')" > "$OUT/cufile-direct.txt" 2>&1
  echo "cuFile direct (KvikIO compat OFF): $(tail -c 300 "$OUT/cufile-direct.txt" | tr '\n' ' ')" >&2
  "$GDIO" check /tmp/gdio-bench-8g.bin --memory device --json > "$OUT/check-device.json" 2>&1
  ;;
esac
python3 bench/summarize.py "$log" | tee "$OUT/summary.txt"

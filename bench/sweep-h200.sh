#!/usr/bin/env bash
# The request-shape table of issue 7 on the GPU machine: `gdio bench --sweep` beside KvikIO
# (compat ON, 8/16/32 threads, `pread`/`pwrite` futures, the same number in flight) on 8 GiB
# files in the page cache of tmpfs (/dev/shm) and ext4 (/tmp), in ONE run, reads and/or writes
# (MODE). Prints per row gdio GB/s, its limit (reads: the pinned host→device copy of that run;
# writes: a plain `pwrite` of the same shape, or the pinned device→host copy where lower), gdio ÷
# limit, the best KvikIO, gdio ÷ KvikIO, and the weakest row.
#
# usage: bench/sweep-h200.sh            (from the repository root)
# env:   GDIO (default .dev/bin/gdio or target/release/gdio), OUT (default /tmp/gdio-sweep),
#        SIZE (8G), THREADS (8,16,32), ITER (3), TARGET (gpu:0), DIRS ("/dev/shm /tmp"),
#        MODE (read|write|both, default both),
#        SWEEP_SMALL_BYTES (1 GiB: the sample KvikIO reads for rows under 1 MiB)
# needs: the peers' wheels from ../shared/tools/fetch-peer-wheels in .whl/ (installed to /tmp/site).
# Writes every JSON line to $OUT/results.jsonl and the table to $OUT/summary.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gdio-sweep}
mkdir -p "$OUT"
GDIO=${GDIO:-$( [ -x .dev/bin/gdio ] && echo .dev/bin/gdio || echo target/release/gdio )}
SIZE=${SIZE:-8G}
THREADS=${THREADS:-8,16,32}
ITER=${ITER:-3}
TARGET=${TARGET:-gpu:0}
MODE=${MODE:-both}
DIRS=${DIRS:-/dev/shm /tmp}
log=$OUT/results.jsonl
: > "$log"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

for dir in $DIRS; do
  fs=$(stat -f -c %T "$dir" | sed 's/ext2\/ext3/ext4/')
  f=$dir/gdio-sweep-8g.bin
  [ -f "$f" ] || "$GDIO" make-file "$f" --size "$SIZE" || exit 1
  cat "$f" > /dev/null # into the page cache
  echo ">> gdio bench --sweep on $fs ($f)" >&2
  "$GDIO" bench --sweep --mode "$MODE" --file "$f" --target "$TARGET" --iterations "$ITER" --json 2>>"$OUT/gdio-stderr.log" \
    | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='$fs'; print(json.dumps(d))" >> "$log"
  echo ">> kvikio sweep on $fs, threads $THREADS" >&2
  python3 bench/kvikio_peer.py sweep "$f" "$THREADS" "$ITER" "$fs" "$MODE" >> "$log" 2>>"$OUT/kvikio-stderr.log"
done
python3 bench/sweep_summary.py "$log" | tee "$OUT/summary.txt"

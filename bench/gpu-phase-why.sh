#!/usr/bin/env bash
# Where the engine's workers spend their time at each request shape (`gdio bench`'s worker
# breakdown: file I/O, waiting for bounce buffers, queueing copies, draining, idle, and how long
# copies take to land), on the 8 GiB tmpfs file (WHY_FILE: another, as the ext4 one
# /tmp/gdio-bench-8g.bin), under each setting of WHY_SETTINGS (environment
# assignments joined by commas, "GDIO_NONE=1" for the defaults; BIN=path runs another build, as
# BIN=.dev/before/gdio for the build before a change). Rows: WHY_SHAPES
# ("SIZE:DEPTH[:random]"), then the default `gdio bench` (read and write; WHY_DEFAULT_BENCH=0
# leaves it out). JSON lines in OUTDIR.
# usage (through bench/gpu-session.sh why): bench/gpu-phase-why.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/why}; mkdir -p "$out"
shm=${WHY_FILE:-/dev/shm/gdio-bench-8g.bin}
cat "$shm" >/dev/null
show() { python3 -c "
import json,sys
d=json.load(sys.stdin)
for r in d['results']:
    w=r['workers']; pct=lambda x: f'{100*x:3.0f}%'
    land=w.get('landing_ms'); land=f'{land:.3f}' if land is not None else '-'
    print(f\"{r['op']:5} {r['gbps']:6.2f} GB/s {r.get('ratio_to_limit') or 0:.2f}x ver {str(r['verified'])[0]} | {w['threads']} workers: io {pct(w['file_io'])} bufwait {pct(w['buffer_wait'])} splitwait {pct(w.get('split_wait', 0))} copyq {pct(w['copy_queue'])} drain {pct(w['draining'])} idle {pct(w['idle'])} inline {pct(w['inline'])} land {land} ms\")
"; }
gdio() { (export ${v//,/ }; exec "${BIN:-$GDIO}" "$@"); }
for rep in $(seq "${WHY_REPS:-1}"); do
  for v in ${WHY_SETTINGS:-GDIO_NONE=1}; do
    n=${v//[^A-Za-z0-9_=.-]/_}
    for shape in ${WHY_SHAPES:-4K:64:random 64K:64 1M:32 4M:16 16M:8 64M:4 1G:2}; do
      IFS=: read -r size depth pattern <<<"$shape"
      gdio bench --json --file "$shm" --mode read --iterations 2 --io-size "$size" --queue-depth "$depth" \
        --pattern "${pattern:-seq}" $( [ "$size" = 4K ] && echo --size 1G ) >"$out/r$rep-$n-$shape.json" 2>>"$out/stderr.txt" \
        && echo "rep $rep $v ${size} x ${depth} ${pattern:-seq}: $(show <"$out/r$rep-$n-$shape.json")"
    done
    if [ "${WHY_DEFAULT_BENCH:-1}" != 0 ]; then
      gdio bench --json >"$out/r$rep-$n-default.json" 2>>"$out/stderr.txt" \
        && show <"$out/r$rep-$n-default.json" | sed "s/^/rep $rep $v default bench: /"
    fi
  done
done

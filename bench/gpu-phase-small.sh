#!/usr/bin/env bash
# Small requests into GPU memory under the engine's queueing, gathering and polling knobs
# (issue 7: 4 KiB batch reads toward 1,000,000 I/Os per second): the engine microbenchmark per
# knob set (every row checks every byte), then the default `gdio bench` under the polling knob.
# SMALL_ROWS picks the parts: full (256 kept in flight against rounds of 256), queue
# (batch_queue_group), poll (completion_poll_us), knobs (the small shapes under each of
# SMALL_KNOBS, space-separated settings of comma-joined variables; default the worker count and
# the polling interval), shapes
# (the other small shapes, defaults against gathering off), bench.
# usage (through bench/gpu-session.sh small): bench/gpu-phase-small.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/small}; mkdir -p "$out"
mb=.dev/bin/engine_microbench
parts=${SMALL_ROWS:-queue,poll,shapes,bench}
row() { # label env... -- mem kib inflight mode
  local label=$1; shift; local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  echo "$label | $(env "${envs[@]}" $mb "$1" "$2" "$3" "${SMALL_SECS:-2}" "$4" 2>&1 | tail -1)"
}
if [[ $parts == *full* ]]; then # 256 kept in flight (batch-full) against rounds of 256 (batch)
  for rep in 1 2; do
    row "host 4K x256 batch rounds" -- host 4 256 batch
    row "host 4K x256 batch kept full" -- host 4 256 batch-full
    row "gpu 4K x256 batch rounds" -- gpu 4 256 batch
    for r in 16 64 128; do
      row "gpu 4K x256 batch kept full, refill $r" MICRO_REFILL=$r -- gpu 4 256 batch-full
    done
  done
fi
if [[ $parts == *knobs* ]]; then # the small shapes under each knob setting, alternating
  for rep in 1 2; do
    for shape in ${SMALL_SHAPES:-4:256:batch-full 4:256:batch 4:64:batch 64:64:async}; do
      IFS=: read -r kib depth mode <<<"$shape"
      for v in ${SMALL_KNOBS:-GDIO_NONE=1 GDIO_THREADS=8 GDIO_COMPLETION_POLL_US=16}; do
        row "gpu ${kib}K x$depth $mode, $v" ${v//,/ } -- gpu "$kib" "$depth" "$mode"
      done
    done
  done
fi
if [[ $parts == *queue* ]]; then
  for g in 1 4 16 64 256; do
    row "host 4K x256 batch, queue $g" GDIO_BATCH_QUEUE_GROUP=$g -- host 4 256 batch
    row "gpu 4K x256 batch, queue $g" GDIO_BATCH_QUEUE_GROUP=$g -- gpu 4 256 batch
  done
fi
if [[ $parts == *poll* ]]; then
  for p in 0 1 4 16; do
    row "gpu 4K x256 batch, poll $p us" GDIO_COMPLETION_POLL_US=$p -- gpu 4 256 batch
    row "gpu 4K x256 async, poll $p us" GDIO_COMPLETION_POLL_US=$p -- gpu 4 256 async
    row "gpu 64K x64 async, poll $p us" GDIO_COMPLETION_POLL_US=$p -- gpu 64 64 async
    row "gpu 4M x16 async, poll $p us" GDIO_COMPLETION_POLL_US=$p -- gpu 4096 16 async
  done
fi
if [[ $parts == *shapes* ]]; then
  for shape in "4 64 batch" "64 64 batch" "4 1 sync" "1024 32 async"; do
    set -- $shape
    row "gpu ${1}K x$2 $3, defaults" -- gpu $1 $2 $3
    row "gpu ${1}K x$2 $3, gather off" GDIO_GATHER_MAX_PIECES=0 -- gpu $1 $2 $3
  done
fi
if [[ $parts == *bench* ]]; then
  bench() { "$GDIO" bench --json "$@" | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s ({r.get('ratio_to_limit') or 0:.2f} x limit, verified {r['verified']})\" for r in json.load(sys.stdin)['results']))"; }
  for rep in 1 2; do
    for v in GDIO_COMPLETION_POLL_US=0 GDIO_COMPLETION_POLL_US=4 GDIO_GATHER_MAX_PIECES=0; do
      echo "default bench, $v: $(env $v bash -c "$(declare -f bench); bench")"
    done
  done
fi

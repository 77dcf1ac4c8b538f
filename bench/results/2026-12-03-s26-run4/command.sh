#!/usr/bin/env bash
# Session 26 run 4: small writes from GPU memory and the crowd rule (inline_max_callers), which
# was measured for reads only: the write rows of run 2 ran on the workers (4 KiB x 64: buffer
# waits most of the workers' time). tmpfs, 512 MiB file, settings alternating per shape.
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
f=/dev/shm/w512.bin; $GDIO make-file $f --size 512M >/dev/null
for rep in 1 2; do
  for shape in "4K 64 random" "64K 64 seq" "256K 32 seq" "4K 8 random"; do
    set -- $shape
    for v in GDIO_NONE=1 GDIO_INLINE_MAX_CALLERS=0 GDIO_INLINE_MAX_BYTES=0; do
      [ $(( $(date +%s) - T0 )) -gt 115 ] && break 3
      echo "rep $rep write $1 x $2 $3 | $v | $(env $v timeout 20 $GDIO bench --json --file $f --mode write --io-size $1 --queue-depth $2 --pattern $3 --iterations 2 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; w=r['workers']; print(f\"{r['gbps']:.2f} GB/s limit {r['limit_gbps']:.2f} verified {r['verified']} inline {r['inline_requests']} crowd {r['inline_busy']} | file_io {w['file_io']:.2f} buffers {w['buffer_wait']:.2f} copies {w['copy_queue']:.2f} inline {w['inline']:.2f}\")")"
    done
  done
done 2>&1 | tee $O/writes.txt
echo "total $(( $(date +%s) - T0 )) s"

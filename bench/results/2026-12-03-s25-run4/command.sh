#!/usr/bin/env bash
# Session 25 run 4: the sweep's 64 KiB x 64 row (run 2: tmpfs 7.85 GB/s, ext4 15.02) again on
# both 8 GiB files, three passes each, with the crowd rule and without; then `gdio load` of an
# 8 GiB checkpoint with the warm-up's own-stream lanes (the default) and without
# (own_stream_max_bytes 0), beside InstantTensor, two reps: what the extra lanes cost the load.
O=$OUT; mkdir -p $O
export GDIO=$PWD/.dev/bin/gdio
for f in /dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; cat $f >/dev/null; done
for rep in 1 2 3; do
  for f in /dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin; do
    for v in GDIO_NONE=1 GDIO_INLINE_MAX_CALLERS=0; do
      echo "rep $rep $f 64K x 64 $v: $(env $v timeout 30 $GDIO bench --json --file $f --mode read --io-size 64K --queue-depth 64 --iterations 1 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s, {r.get('inline_requests')} inline, {r.get('inline_busy')} sent for a crowd\")")"
    done
  done
done 2>&1 | tee $O/shape64k.txt
OUT=$O/l LOADAB_GIB=8 LOADAB_REPS=2 LOADAB_SETTINGS="GDIO_NONE=1 GDIO_OWN_STREAM_MAX_BYTES=0" SKIP_FILES=1 \
  timeout 300 bash bench/gpu-session.sh loadab >$O/loadab.txt 2>&1
cat $O/l/logs/loadab.txt | tail -30

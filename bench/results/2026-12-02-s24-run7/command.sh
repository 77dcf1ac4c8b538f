#!/usr/bin/env bash
# Session 24 run 7 (short, the last device seconds): after a crowd, threads without an inline
# lane make none. Default against every request to the workers and no caller limit, one rep.
f=/dev/shm/g1.bin; [ -f $f ] || .dev/bin/gdio make-file $f --size 1G >/dev/null
for shape in "64K 64" "64K 16" "256K 32" "256K 16" "4K 8"; do
  set -- $shape
  for v in GDIO_NONE=1 GDIO_INLINE_MAX_BYTES=0 GDIO_INLINE_MAX_CALLERS=0; do
    r=$(env $v timeout 30 .dev/bin/gdio bench --file $f --mode read --io-size $1 --queue-depth $2 --iterations 2 2>&1)
    echo "$1 x $2 | $v | $(echo "$r" | grep -oE '[0-9.]+ per second' | head -1) | $(echo "$r" | grep -oE '[0-9]+ requests run by their callers; [0-9]+ sent' | head -1)"
  done
done

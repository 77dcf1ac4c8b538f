#!/usr/bin/env bash
# Session 25 run 5: two whole `gdio bench --sweep` passes on the 8 GiB tmpfs file (run 2's
# tmpfs 64 KiB x 64 row read 7.85 GB/s where run 4 read 11.4-13.2 outside the sweep), each row
# with its inline and crowd counts.
mkdir -p $OUT; for rep in 1 2; do timeout 120 .dev/bin/gdio bench --sweep --file /dev/shm/gdio-bench-8g.bin --iterations 1 --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin)
for r in d['results']: print('rep $rep', r.get('pattern'), r.get('io_size'), r.get('queue_depth'), round(r['gbps'],2), 'inline', r.get('inline_requests'), 'busy', r.get('inline_busy'), 'verified', r.get('verified'))" | tee -a $OUT/sweep64k.txt; done

#!/usr/bin/env bash
# Session 28 run 3: run 2's ext4 write table put 4 KiB random × 64 at 0.70 × the plain pwrite
# (session 26, writes not gathered then: 0.84 ×). Small writes into an ext4 file (page cache),
# `gather_writes` on (the default) against off, alternating, three reps; then the default bench.
O=$OUT; mkdir -p $O
T0=$(date +%s)
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=3 WRITEAB_FILE=/tmp/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITES=false" \
  WRITEAB_SHAPES="4K:64:random 16K:32:random 64K:64:seq" \
  timeout 330 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep|^test" $O/w/logs/writeab.txt | tee $O/writeab.txt
echo "writeab done after $(( $(date +%s) - T0 )) s"
export GDIO=$PWD/.dev/bin/gdio
echo "default bench: $(timeout 60 $GDIO bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']}\" for r in json.load(sys.stdin)['results']))")" | tee $O/bench.txt
echo "total $(( $(date +%s) - T0 )) s"

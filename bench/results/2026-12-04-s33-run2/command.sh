#!/usr/bin/env bash
# Session 33 run 2: the final build's defaults (split into one buffer, 4 pieces per worker's
# share) against 1 piece per worker and against no one-buffer split, in balanced order (ABBA
# phase, three settings, three reps): KvikIO 26.10 compat OFF through gdio's libcufile at 8 and
# 16 threads beside compat ON, `gdio bench` 4 MiB x 8, 8 MiB x 8 and 4 MiB x 16 from tmpfs; then
# the request-shape table (`gdio bench --sweep --mode read`, 4 GiB of each 8 GiB file) on tmpfs
# and ext4 page cache, defaults against `split_into_one_buffer` false, alternating.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
el files
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=260 ABBA_SHAPES="4M:8 8M:8 4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_SPLIT_PIECES_PER_WORKER=1 GDIO_SPLIT_INTO_ONE_BUFFER=false" \
  timeout 400 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
sw() { # dir setting
  env $2 timeout 60 $GDIO bench --sweep --mode read --file $1/gdio-bench-8g.bin --size 4G --iterations 2 --json 2>>$O/sweep-stderr.txt | python3 -c "
import json,sys; d=json.load(sys.stdin)
print(' | '.join(f\"{r.get('label')} {r['gbps']:.2f} ({(r.get('ratio_to_limit') or 0):.2f}){'' if r.get('verified') else ' UNVERIFIED'}\" for r in d['results']))"; }
for dir in /dev/shm /tmp; do
  cat $dir/gdio-bench-8g.bin > /dev/null
  for s in GDIO_NONE=1 GDIO_SPLIT_INTO_ONE_BUFFER=false GDIO_SPLIT_INTO_ONE_BUFFER=false GDIO_NONE=1; do
    [ $(( $(date +%s) - T0 )) -gt 540 ] && { echo "no time for $dir $s"; continue; }
    echo "sweep $dir $s: $(sw $dir $s)"
  done
done | tee $O/sweep.txt
el total

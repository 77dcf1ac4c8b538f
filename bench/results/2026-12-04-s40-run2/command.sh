#!/usr/bin/env bash
# Session 40 run 2: where a lone caller's 4 MiB read spends its 0.3 ms. 1. An Nsight Systems
# trace of bench/cufile-loop.c (one thread, 4 MiB cuFileRead calls through gdio's libcufile)
# with the defaults, without early copies and with quarters, read by bench/nsys_lone_read.py:
# each copy's wait to start and time on the GPU, the last copy's landing, and the time from a
# landing to the next call's first copy. 2. `gdio bench` 4 MiB x 1 from the ext4 page cache
# under the knobs of a lone read, two reps in balanced order.
O=$OUT; mkdir -p $O/logs
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
cc -O2 -pthread -Icrates/gdio-cufile/include bench/cufile-loop.c -o /tmp/cufile-loop -ldl || exit 1
cat $f > /dev/null
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda*/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
el setup
if [ -n "$NSYS" ]; then
  for v in "GDIO_NONE=1" "GDIO_SPLIT_EARLY_COPY=false" "GDIO_SPLIT_EARLY_COPY_PARTS=4"; do
    n=$(echo "$v" | tr -c 'A-Za-z0-9\n' _)
    env $v timeout 120 $NSYS profile -t cuda --sample=none --cpuctxsw=none -f true -o /tmp/lone-$n \
      /tmp/cufile-loop $f 4 1 1 plain > $O/logs/nsys-$n.txt 2>&1
    timeout 120 $NSYS export --type sqlite -f true -o /tmp/lone-$n.sqlite /tmp/lone-$n.nsys-rep >> $O/logs/nsys-$n.txt 2>&1
    echo "-- $v: $(grep -h gbps $O/logs/nsys-$n.txt | head -1)"
    python3 bench/nsys_lone_read.py /tmp/lone-$n.sqlite 4194304 2>&1
    el "nsys $v"
  done | tee $O/nsys.txt
fi
b() { env $1 timeout 60 $GDIO bench --json --file $f --mode read --iterations 3 --io-size 4M --queue-depth 1 2>>$O/logs/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f}\" + ('' if r['verified'] else ' UNVERIFIED'))"; }
V=(GDIO_NONE=1 GDIO_SPLIT_EARLY_COPY_PARTS=4 GDIO_SPLIT_PIECES_PER_WORKER=2 GDIO_SPLIT_PIECES_PER_WORKER=8 GDIO_THREADS=16 GDIO_COMPLETION_WATCHER=false GDIO_PINNED_HUGE_PAGES=false GDIO_COPY_STREAMS=0 GDIO_COMPLETION_POLL_US=0)
declare -A R
for rep in 1 2; do
  [ $(( $(date +%s) - T0 )) -gt 400 ] && break
  if [ $rep = 1 ]; then order="${V[*]}"; else order=$(printf '%s\n' "${V[@]}" | tac | tr '\n' ' '); fi
  for v in $order; do R[$v]="${R[$v]:-} $(b $v)"; done
done
for v in "${V[@]}"; do echo "4M x 1 $v:${R[$v]}"; done | tee $O/knobs.txt
el total
tar czf $O/logs.tgz -C $O logs && rm -rf $O/logs

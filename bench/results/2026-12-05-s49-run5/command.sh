#!/usr/bin/env bash
# Session 49 run 5 (`OUT=$OUT timeout 300 bash bench/results/2026-12-05-s49-run5/command.sh`), the
# machine of runs 3-4, session 48's build (f521a20, carried in .dev/): does gdio's engine there
# copy out of the page cache as slowly per worker at four reads in flight as run 2's machine did
# (3.5 GB/s), where bench/split-pread.c's threads copied 5-6? `gdio bench` 4 MiB x 1/2/4/8/16
# on the ext4 file, two reps, each row with the workers' shares and their file I/O rate; then
# split-pread with more runnable threads than CPUs (SPINNERS=8 beside twelve readers).
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
row() {
  "$GDIO" bench --json --file $f --mode read --iterations 3 --io-size "$1" --queue-depth "$2" 2>>$O/stderr.txt | python3 -c "
import json, sys
r = json.load(sys.stdin)['results'][0]
w = r.get('workers', {})
s = r.get('cpu_steal')
rate = w.get('file_io_gbps')
print(f\"{r['gbps']:.2f} GB/s; workers: file I/O {100 * w.get('file_io', 0):.0f}% at {'-' if rate is None else f'{rate:.2f}'} GB/s a worker, split_wait {100 * w.get('split_wait', 0):.0f}%, draining {100 * w.get('draining', 0):.0f}%, idle {100 * w.get('idle', 0):.0f}%; split {r.get('split_reads')}; steal {'-' if s is None else f'{100 * s:.1f}'}%; verified {r['verified']}\")"
}
for rep in 1 2; do
  for d in 1 2 4 8 16; do echo "rep $rep | 4M x $d | $(row 4M $d)"; done
done 2>&1 | tee $O/bench-rows.txt
cc -O2 -pthread bench/split-pread.c -o /tmp/split-pread || exit 1
for rep in 1 2; do
  for sp in 0 8; do echo "rep $rep | SPINNERS=$sp | 12 4 256 interleaved | $(SPINNERS=$sp /tmp/split-pread $f 12 4 256 interleaved | tail -2 | tr '\n' ' ')"; done
done 2>&1 | tee $O/split-pread.txt
head -c 2000 $O/stderr.txt

#!/usr/bin/env bash
# What the host gives two GPUs reading through host memory at once (issues 10 and 11): the
# default `gdio bench` read onto GPU 0 alone, then two `gdio bench` processes at once, one per
# GPU, each reading the whole 8 GiB tmpfs file (1 GiB requests, two in flight, five passes),
# with TWO_THREADS workers each (default "8 12 16"). The sum of the two is what two engines,
# one per GPU, reach together; beside it the one-GPU figure of the same run (part procs).
# Part probe: the same in ONE process (`multi_gpu_probe`: each GPU reads its half, 1 GiB
# requests, two in flight per GPU), one engine shared by both GPUs (12 and 24 workers) against
# an engine per GPU (12 workers each) and one engine with a pool per GPU (`pool_per_gpu`), the build before a change (.dev/before) and after it;
# one row polls markers every 50 us instead of 4 (do many workers asking the driver about
# their copies hold each other up?).
# TWO_PARTS picks the parts (default procs,probe).
# usage (through bench/gpu-session.sh twogpu): bench/gpu-phase-twogpu.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/twogpu}; mkdir -p "$out"
f=/dev/shm/gdio-bench-8g.bin
cat "$f" >/dev/null
gbps() { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(f\"{r['gbps']:.2f}\")" "$1"; }
one() { # threads target json
  "$GDIO" bench --json --file "$f" --mode read --iterations 5 --io-size 1G --queue-depth 2 \
    --threads "$1" --target "$2" >"$3" 2>>"$out/stderr.txt"
}
parts=${TWO_PARTS:-procs,probe}
if [[ $parts == *probe* ]]; then
  for rep in 1 2; do
    for m in "before shared 12" "before shared 24" "before per-gpu 12" "before shared 24 50" \
      "after shared 12" "after shared 24" "after per-gpu 12" "after pool-per-gpu 12"; do
      set -- $m
      b=.dev/bin/multi_gpu_probe; [ "$1" = before ] && b=.dev/before/multi_gpu_probe
      [ -x "$b" ] || continue
      poll=(); [ -n "${4:-}" ] && poll=(GDIO_COMPLETION_POLL_US=$4)
      echo "rep $rep $1, poll every ${4:-4} us: $(env "${poll[@]}" "$b" "$f" "$2" "$3" 1024 2 4 2>&1 | tail -1)"
    done
  done
fi
[[ $parts == *procs* ]] || exit 0
for t in ${TWO_THREADS:-8 12 16}; do
  one "$t" gpu:0 "$out/one-$t.json"
  echo "threads $t: GPU 0 alone $(gbps "$out/one-$t.json") GB/s"
  one "$t" gpu:0 "$out/a-$t.json" & p0=$!
  one "$t" gpu:1 "$out/b-$t.json" & p1=$!
  wait $p0 $p1
  a=$(gbps "$out/a-$t.json"); b=$(gbps "$out/b-$t.json")
  echo "threads $t each: GPU 0 $a + GPU 1 $b = $(python3 -c "print(f'{$a+$b:.2f}')") GB/s at once"
done

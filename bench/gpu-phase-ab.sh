#!/usr/bin/env bash
# The build before a change (.dev/before/gdio, .dev/before/engine_microbench) against the build
# after it ($GDIO, .dev/bin/engine_microbench), alternating in one run: the request-shape rows
# from 1 MiB up on tmpfs and the default `gdio bench` (part `bench`), and the engine
# microbenchmark's small shapes into GPU memory (part `micro`). AB_PARTS picks the parts
# (default both), AB_SHAPES="SIZE:DEPTH ..." the bench rows, AB_MICRO="KIB DEPTH MODE,..." the
# microbenchmark rows, AB_REPS the alternations.
# usage (through bench/gpu-session.sh ab): bench/gpu-phase-ab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/ab}; mkdir -p "$out"
f=/dev/shm/gdio-bench-8g.bin
cat "$f" >/dev/null
one() { "$1" bench --json --file "$f" --mode read --iterations 3 --io-size "$2" --queue-depth "$3" \
  | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s ({r.get('ratio_to_limit') or 0:.2f} x limit, verified {r['verified']})\")"; }
parts=${AB_PARTS:-bench,micro}
micro_shapes=("4 256 batch" "4 256 batch-full" "4 64 batch" "4 256 async" "64 64 async" "4 1 sync"
  "4096 16 async")
[ -z "${AB_MICRO:-}" ] || IFS=, read -ra micro_shapes <<<"$AB_MICRO"
if [[ $parts == *micro* ]]; then
  for rep in $(seq "${AB_REPS:-2}"); do
    for shape in "${micro_shapes[@]}"; do
      set -- $shape
      for b in .dev/before/engine_microbench .dev/bin/engine_microbench; do
        echo "rep $rep micro gpu $* $([[ $b == *before* ]] && echo before || echo after): $("$b" gpu "$1" "$2" 2 "$3" 2>&1 | tail -1)"
      done
    done
  done
fi
[[ $parts == *bench* ]] || exit 0
for rep in $(seq "${AB_REPS:-2}"); do
  for shape in ${AB_SHAPES:-1M:32 4M:16 16M:8 64M:4}; do
    for b in .dev/before/gdio "$GDIO"; do
      echo "rep $rep ${shape/:/ x } $([ "$b" = "$GDIO" ] && echo after || echo before): $(one "$b" "${shape%%:*}" "${shape##*:}")"
    done
  done
  for b in .dev/before/gdio "$GDIO"; do
    echo "rep $rep default bench $([ "$b" = "$GDIO" ] && echo after || echo before): $("$b" bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s (verified {r['verified']})\" for r in json.load(sys.stdin)['results']))")"
  done
done

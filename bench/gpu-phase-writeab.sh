#!/usr/bin/env bash
# Small writes out of GPU memory under several settings, alternating in one run (session 26
# built `gather_writes`; session 27 measured it with this script and turned it on):
# `gdio bench --mode write` on a file of WRITEAB_SIZE (512M; WRITEAB_FILE, default on tmpfs:
# /dev/shm/gdio-writeab.bin) for each of WRITEAB_SHAPES
# ("SIZE:DEPTH:PATTERN", default 4K:64:random 64K:64:seq 256K:32:seq 4K:8:random) under each of
# WRITEAB_SETTINGS (space-separated, each environment assignments joined by commas; default:
# the defaults (gathered writes), writes not gathered, gathered with a copy call per piece, no
# caller limit), WRITEAB_REPS (2) times. Each row: GB/s,
# the plain `pwrite` limit of the same shape measured just before it, verified, how many
# writes were gathered, ran inline or were sent to the workers for a crowd, the most buffered
# writes in flight into the file at once (`file_writers`), and the untimed fsync. Then the GPU tests
# of gathered writes (`gpu_cuda gathered`), if .dev/tests/gpu_cuda is there and WRITEAB_TESTS is
# not 0.
# usage (through bench/gpu-session.sh writeab): bench/gpu-phase-writeab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/writeab}; mkdir -p "$out"
GDIO=${GDIO:-$PWD/.dev/bin/gdio}
read -ra settings <<<"${WRITEAB_SETTINGS:-GDIO_NONE=1 GDIO_GATHER_WRITES=false GDIO_GATHER_BATCH_COPY=false GDIO_INLINE_MAX_CALLERS=0}"
read -ra shapes <<<"${WRITEAB_SHAPES:-4K:64:random 64K:64:seq 256K:32:seq 4K:8:random}"
f=${WRITEAB_FILE:-/dev/shm/gdio-writeab.bin}
[ -f $f ] || "$GDIO" make-file $f --size "${WRITEAB_SIZE:-512M}" >/dev/null || exit 1
for rep in $(seq "${WRITEAB_REPS:-2}"); do
  for shape in "${shapes[@]}"; do
    IFS=: read -r io depth pattern <<<"$shape"
    for s in "${settings[@]}"; do
      line=$(env ${s//,/ } timeout 60 "$GDIO" bench --json --file $f --mode write --io-size "$io" \
        --queue-depth "$depth" --pattern "$pattern" --iterations 2 2>>"$out/stderr.txt" \
        | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s limit {r['limit_gbps']:.2f} ({r['ratio_to_limit']:.2f} x) verified {r['verified']} gathered {r['gathered_writes']} inline {r['inline_requests']} crowd {r['inline_busy']} writers {r.get('most_writers_at_once')} fsync {(r.get('fsync_seconds') or 0):.1f} s\")")
      echo "rep $rep write $io x $depth $pattern | $s | ${line:-failed}"
    done
  done
done | tee "$out/writeab.txt"
if [ "${WRITEAB_TESTS:-1}" = 1 ] && [ -x .dev/tests/gpu_cuda ]; then
  timeout 120 .dev/tests/gpu_cuda gathered --test-threads 1 2>&1 | grep -E "^test |test result" | tee -a "$out/writeab.txt"
fi

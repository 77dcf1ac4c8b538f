#!/usr/bin/env bash
# KvikIO compat OFF through gdio's libcufile.so.0, the build before a change
# (.dev/before/libcufile.so.0) against the one after (.dev/lib/libcufile.so.0), alternating,
# beside KvikIO compat ON, 4 MiB tasks on the 8 GiB ext4-cached file, at SPINAB_THREADS
# threads (default "8 16 32"), SPINAB_REPS times (issue 9: OFF on gdio ≥ 1.10 × ON).
# usage (through bench/gpu-session.sh spinab): bench/gpu-phase-spinab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/spinab}; mkdir -p "$out"
f=/tmp/gdio-bench-8g.bin
cat "$f" >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gbps() { python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(r['gbps'], r.get('verified'))"; }
for rep in $(seq "${SPINAB_REPS:-2}"); do
  for t in ${SPINAB_THREADS:-8 16 32}; do
    for w in before after; do
      lib=.dev/lib/libcufile.so.0; [ $w = before ] && lib=.dev/before/libcufile.so.0
      echo "rep $rep t$t KvikIO OFF on gdio $w: $(LD_PRELOAD=$PWD/$lib python3 bench/cufile_kvikio_read.py off "$f" "$t" 3 2>>"$out/stderr.txt" | gbps)"
    done
    echo "rep $rep t$t KvikIO ON: $(python3 bench/cufile_kvikio_read.py on "$f" "$t" 3 2>>"$out/stderr.txt" | gbps)"
  done
done

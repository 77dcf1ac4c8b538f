#!/usr/bin/env bash
# The GPU run that first measured `read_ahead_bytes` (engine/read_ahead.rs; written in
# session 50 before a GPU machine was lent, ran as its run 1; the default came from
# bench/read-ahead-shapes-ab.sh, session 51). On the GPU machine, from the repository root,
# with .dev/ (bash bench/build-dev.sh) and .whl/ (../shared/tools/fetch-peer-wheels .whl)
# carried:
#   OUT=$OUT timeout 580 bash bench/read-ahead-ab.sh
# 1. The GPU tests of read-ahead and of the page-cache pins (they share pinned_read.rs), and
#    the random-range test, on the real GPU.
# 2. ABBA, three reps (bench/gpu-phase-abba.sh): read-ahead off (the default) against
#    RA_BYTES (64 MiB) — KvikIO compat OFF through gdio's libcufile.so.0 at RA_THREADS
#    ("1 4 8 16") on the 8 GiB ext4 file, `gdio bench` 4 MiB x 4 and x 8 (seq) on the tmpfs
#    file, KvikIO compat ON at each thread count; bench/abba_verdict.py's summary gives each
#    setting against the first and issue 9's ratios per setting.
# 3. The default `gdio bench` (the README's main job) under each setting.
# What to look for: issue 9's OFF / ON at four and eight threads (1.10 wanted), sixteen not
# lower than off, `read_ahead_unused_bytes` small, and the default bench rows unchanged.
O=${OUT:?OUT: where the logs go}; mkdir -p "$O"; R=$(pwd)
export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
on="GDIO_READ_AHEAD_BYTES=${RA_BYTES:-67108864}"
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
GDIO_REQUIRE_GPU=1 timeout 120 .dev/tests/gpu_cuda --test-threads 1 gpu_read_ahead gpu_page_cache_pins \
  gpu_reads_random > "$O/gpu-tests.txt" 2>&1
echo "== gpu tests rc=$? ($((SECONDS - t0)) s): $(grep -E '^test |test result' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-400)"
OUT=$O/a ABBA_THREADS="${RA_THREADS:-1 4 8 16}" ABBA_SHAPES="4M:4 4M:8" \
  ABBA_SETTINGS="GDIO_NONE=1 $on" ABBA_REPS=3 ABBA_PASSES=3 ABBA_BUDGET_S=$((330 - (SECONDS - t0))) \
  timeout $((470 - (SECONDS - t0))) bash bench/gpu-session.sh abba > "$O/abba-session.txt" 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cut -c1-200 "$O/a/logs/abba.txt" 2>/dev/null || tail -20 "$O/abba-session.txt"
for v in GDIO_NONE=1 "$on"; do
  [ $((SECONDS - t0)) -gt 500 ] && break
  env "$v" timeout 60 "$GDIO" bench > "$O/bench-default-$v.txt" 2>&1
  echo "== default gdio bench $v: $(grep -E '^read|^write|ahead' "$O/bench-default-$v.txt" | head -6 | tr '\n' '|' | cut -c1-500)"
done
echo "== done in $((SECONDS - t0)) s"
[ -d "$O/a/logs" ] && tar czf "$O/a-logs.tgz" -C "$O/a" logs && rm -rf "$O/a"

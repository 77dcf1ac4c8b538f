#!/usr/bin/env bash
# Phase `kvrow`: issue 9's performance row beside this host's ceilings, KVROW_REPS (3) times.
# Each rep: the pinned 1 GiB host→device copy (the limit), the ring of 4 MiB registered
# huge-page buffers that twelve threads copy with no file read (gdio's bounce ring's own link,
# bench/pagecache-dma-probe.c `pinnedq`), then for each of KVROW_THREADS ("8 16") KvikIO 26.10
# reading KVROW_FILE (the 8 GiB ext4 file, page-cached first) with compat mode ON, and with
# compat mode OFF through gdio's libcufile (LD_PRELOAD), three timed passes each
# (bench/cufile_kvikio_read.py), and OFF ÷ ON. Stops starting reps after KVROW_BUDGET_S (300) s.
# With KVROW_BENCH=1, each OFF row is followed by `gdio bench` of the same shape (4 MiB × N from
# the same file, three iterations) and OFF ÷ it, so that both ratios of issue 9 come in pairs,
# with the hypervisor's share of the CPUs while the bench row ran (its `cpu_steal`); every row
# ends with that share over KvikIO's timed passes, ON and OFF (bench/cpu_steal.py).
# After the reps, a table per thread count and the weakest sample of each ratio against its
# target (bench/kvrow_verdict.py).
# Then (KVROW_WHY=1, the default) one more compat-OFF pass per thread count with the library's
# summary at CUFILE_LOGGING_LEVEL=INFO: calls in flight, a call's time, where the workers' time
# went (file I/O, buffers, split partners, draining, idle) and how long copies took to land.
#   bash bench/gpu-phase-kvrow.sh LOGDIR   (repo root; through bench/gpu-session.sh kvrow)
# needs: LIB (gdio's libcufile, default .dev/lib/libcufile.so.0), KvikIO and CuPy on PYTHONPATH.
set -uo pipefail
out=${1:-/tmp/kvrow}; mkdir -p "$out"
lib=$(readlink -f "${LIB:-.dev/lib/libcufile.so.0}")
f=${KVROW_FILE:-/tmp/gdio-bench-8g.bin}
[ -f "$f" ] || { echo "no file $f (bench/gpu-session.sh makes it)"; exit 2; }
cat "$f" >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o "$out/pcprobe" -ldl || exit 1
P="timeout 30 $out/pcprobe"
[ -z "${CUFILE_ENV_PATH_JSON:-}" ] && [ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
# GB/s and the hypervisor's steal over the timed passes ('-' when unknown).
gb() { python3 -c "
import json, sys; r = json.loads(sys.stdin.readlines()[-1]); s = r.get('cpu_steal')
print(round(r['gbps'], 2), '-' if s is None else round(100 * s, 1))" 2>/dev/null; }
steal_of() { local v=${1:-failed -}; echo "${v#* }"; }  # the steal half of gb's output
t0=$SECONDS
for rep in $(seq "${KVROW_REPS:-3}"); do
  [ $((SECONDS - t0)) -gt "${KVROW_BUDGET_S:-300}" ] && { echo "rep $rep: no time left"; break; }
  echo "rep $rep pinned 1 GiB copies: $(NSTREAMS=1 $P "$f" 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
  echo "rep $rep ring 4 MiB x 12 no CPU copy (hp): $(PINALLOC=hp MARKER=none NBUF=2 NSTREAMS=1 $P "$f" 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  for t in ${KVROW_THREADS:-8 16}; do
    on=$(python3 bench/cufile_kvikio_read.py on "$f" "$t" 3 2>>"$out/stderr.txt" | gb)
    off=$(LD_PRELOAD=$lib python3 bench/cufile_kvikio_read.py off "$f" "$t" 3 2>>"$out/stderr.txt" | gb)
    kvsteal=" | KvikIO steal ON $(steal_of "$on") % OFF $(steal_of "$off") %"
    on=${on%% *}; off=${off%% *}
    ratio=$(python3 -c "print(round(${off:-0}/${on:-0},3))" 2>/dev/null || echo failed)
    bench=
    if [ "${KVROW_BENCH:-0}" = 1 ]; then
      b=$("${GDIO:-.dev/bin/gdio}" bench --json --file "$f" --mode read --iterations 3 --io-size 4M \
        --queue-depth "$t" 2>>"$out/stderr.txt" | python3 -c "
import json, sys; r = json.load(sys.stdin)['results'][0]
s = r.get('cpu_steal')
print((round(r['gbps'], 2) if r['verified'] else 'unverified'), '-' if s is None else round(100 * s, 1))" 2>/dev/null)
      steal=${b#* }; b=${b%% *}
      bench=" | gdio bench 4M x $t ${b:-failed} | OFF / bench $(python3 -c "print(round(${off:-0}/${b:-0},3))" 2>/dev/null || echo failed) | steal ${steal:--} %"
    fi
    echo "rep $rep t$t KvikIO ON ${on:-failed} | OFF on gdio ${off:-failed} | ratio $ratio$bench$kvsteal"
  done
done | tee "$out/kvrow.txt"
# The weakest sample of each ratio against its target (bench/kvrow_verdict.py).
python3 bench/kvrow_verdict.py "$out/kvrow.txt" | tee -a "$out/kvrow.txt"
[ "${KVROW_WHY:-1}" = 1 ] || exit 0
for t in ${KVROW_THREADS:-8 16}; do
  rm -f "$out/why-t$t.log"
  CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH="$out/why-t$t.log" LD_PRELOAD=$lib \
    python3 bench/cufile_kvikio_read.py off "$f" "$t" 1 >/dev/null 2>>"$out/stderr.txt"
  echo "why t$t: $(grep -h 'synchronous I/O' "$out/why-t$t.log" 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee -a "$out/kvrow.txt"

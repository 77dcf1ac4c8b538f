#!/usr/bin/env bash
# Phase `spread`: why one process at four reads in flight reads 26 GB/s and the next 30. Session
# 46 on the H200: KvikIO compat OFF through gdio's libcufile at four threads read 26.37 to 31.28
# GB/s from one process to the next while each process's own passes stayed within a few %
# (ABBA passes 26.22 / 26.37 / 27.97 in one, 29.91 / 29.61 / 29.58 in another), and `gdio
# bench` 4 MiB × 4 read 24.56 to 31.50, so that pairing the two (issue 9's OFF ÷ bench) read
# 0.866 once. SPREAD_PROCS (8) processes in turn, each KvikIO compat OFF at SPREAD_THREADS (4)
# threads, SPREAD_PASSES (3) timed passes, with the library's summary at exit
# (CUFILE_LOGGING_LEVEL=INFO) and where its threads ran (bench/thread_placement.py: the busy
# gdio workers, how many cores they used, how often a busy worker shared its core with another
# busy thread of the process). Per process one line: GB/s of each pass, the workers' shares,
# the rate of a worker's file I/O (the library's summary says it), cores used and shared. If the slow processes' workers read as fast as the quick
# ones' but idle more, the time goes between the reads (hand-offs, copies, wake-ups); if they
# read slower, it goes in the copies themselves (where they run, what memory they copy into:
# how much of the bounce buffers the kernel backed with huge pages, a wish it may refuse).
# The CPU topology first (lscpu -e).
#   bash bench/gpu-phase-spread.sh LOGDIR   (repo root; through bench/gpu-session.sh spread)
# needs: LIB (gdio's libcufile), KvikIO and CuPy on PYTHONPATH, SPREAD_FILE (the 8 GiB ext4 file).
set -uo pipefail
out=${1:-/tmp/spread}; mkdir -p "$out"
lib=$(readlink -f "${LIB:-.dev/lib/libcufile.so.0}")
f=${SPREAD_FILE:-/tmp/gdio-bench-8g.bin}
[ -f "$f" ] || { echo "no file $f (bench/gpu-session.sh makes it)"; exit 2; }
cat "$f" >/dev/null
[ -z "${CUFILE_ENV_PATH_JSON:-}" ] && [ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
lscpu -e | tee "$out/topology.txt"
t=${SPREAD_THREADS:-4}
for p in $(seq "${SPREAD_PROCS:-8}"); do
  rm -f "$out/why-$p.log"
  CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH="$out/why-$p.log" LD_PRELOAD=$lib \
    python3 bench/thread_placement.py --prefix "${SPREAD_GROUP:-gdio-worker}" -- \
    python3 bench/cufile_kvikio_read.py off "$f" "$t" "${SPREAD_PASSES:-3}" >"$out/run-$p.json" 2>"$out/place-$p.txt"
  python3 - "$out/run-$p.json" "$out/why-$p.log" "$out/place-$p.txt" "$p" <<'EOF'
import json, re, sys
run, why, place, p = sys.argv[1:]
r = json.loads(open(run).read().splitlines()[-1])
w = open(why).read()
s = w[w.find("synchronous I/O"):]
def pct(name):
    m = re.search(rf"{name} (\d+)%", s)
    return int(m.group(1)) / 100 if m else None
bytes_ = float(re.search(r"(\d+) bytes asked", s).group(1))
wall = float(re.search(r"([\d.]+) s with any in flight", s).group(1))
threads = int(re.search(r"(\d+) workers:", s).group(1))
io, idle = pct("file I/O"), pct("idle")
# The library's own rate of a worker's file I/O; else bytes over the workers' file-I/O share
# of the wall time with calls in flight.
m = re.search(r"file I/O ran at ([\d.]+) GB/s", s)
per = float(m.group(1)) if m else (bytes_ / (threads * io * wall) / 1e9 if io else float("nan"))
def find(pattern):
    m = re.search(pattern, s)
    return m.group(1) if m else "-"
landed = find(r"copies landed ([\d.]+) ms")
woke = find(r"woke ([\d.]+) ms")
steal = find(r"CPUs ([\d.]+) % of their time since")
pl = json.loads([l for l in open(place) if l.startswith("{")][-1])
g = next(iter(pl["busy_share"]), None)
h = pl.get("huge_madvised_kib", {})
gc = pl.get("group_cpus", {}).get(g, {})
top = " ".join(f"{c}:{n}" for c, n in sorted(gc.items(), key=lambda x: -x[1]))
print(f"proc {p}: passes {r.get('pass_gbps')} | file I/O {io:.0%} idle {idle:.0%} | a worker's file I/O {per:.2f} GB/s"
      f" | busy workers {pl['busy_share'].get(g)} on {pl['cores_used'].get(g)} cores, sharing a core {pl['shared_core'].get(g)}"
      f" | copies landed {landed} ms, callers woke {woke} ms"
      f" | bounce buffers on huge pages {h.get('anon_huge', 0) >> 10} of {h.get('rss', 0) >> 10} MiB"
      f" | hypervisor's steal {steal} %"
      f" | workers' CPUs (busy samples) {top}")
EOF
done | tee "$out/spread.txt"

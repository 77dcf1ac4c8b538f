#!/usr/bin/env bash
# gdio's libcufile.so.0 on the GPU machine: (a) KvikIO 26.10's own Python tests with compat mode
# OFF through our library, (b) torch.cuda.gds save/load round trips and an 8 GiB load against the
# pinned host->device copy, (c) KvikIO compat OFF on our library vs KvikIO compat ON (same
# threads) and gdio bench with KvikIO's request shape, on an 8 GiB page-cached file.
#
# (d) `registered`: cuFileRead of 4 KiB-1 MiB into device memory with and without
# cuFileBufRegister. (e) `nvidia`: NVIDIA's own compat mode, made to run by writing the udev
# properties it wants (needs root; the file is removed again), against ours, hot and cold.
#
# (f) `kvikio-http-release`: KvikIO's test_http_io.py through our library with its two
# retry-message checks reading standard error (bench/kvikio-http-release-logging.py), where the
# released 26.10.0 wheel logs that message at KVIKIO_LOG_LEVEL=WARN; the stored tests predate it.
#
# usage: bench/cufile-h200.sh [all|kvikio-tests|kvikio-tests-plain|kvikio-http-release|torch|perf|registered|nvidia]...   (repo root)
#   env: PERF_THREADS (default "8 16 32"), PERF_CAPPED=1 (see perf), FILE (default the ext4 file)
# needs: LIB = gdio's library (default .dev/lib/libcufile.so.0, else target/release/libcufile.so),
#        GDIO = gdio release binary (default .dev/bin/gdio, else target/release/gdio),
#        the peer wheels from ../shared/tools/fetch-peer-wheels in .whl/ (installed to /tmp/site).
# Writes JSON lines to ${OUT:-/tmp/gdio-cufile}/results.jsonl and prints a table.
# Remove any /run/udev/data file written for NVIDIA's compat mode first: only one behaviour
# should be under test.
set -uo pipefail
what=${*:-all}
OUT=${OUT:-/tmp/gdio-cufile}
mkdir -p "$OUT"
log=$OUT/results.jsonl
: > "$log"
root=$(pwd)
src=${LIB:-$( [ -f .dev/lib/libcufile.so.0 ] && echo .dev/lib/libcufile.so.0 || echo target/release/libcufile.so )}
GDIO=${GDIO:-$( [ -x .dev/bin/gdio ] && echo .dev/bin/gdio || echo target/release/gdio )}
mkdir -p "$OUT/lib"
cp -f "$src" "$OUT/lib/libcufile.so.0" || { echo "no libcufile at $src (set LIB)"; exit 2; }
OURS=$(readlink -f "$OUT/lib/libcufile.so.0")
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# What KvikIO's HTTP and S3 tests import (bench/kvikio-test-deps.sh packs it), last on the
# tests' path so that the machine's own packages win wherever it has them.
TEST_SITE=
if [ -f .whl/kvikio-test-deps-cp312.tar.xz ]; then
  mkdir -p /tmp/kt-site && tar -C /tmp/kt-site -xJf .whl/kvikio-test-deps-cp312.tar.xz
  TEST_SITE=/tmp/kt-site
else
  echo "WARNING: no .whl/kvikio-test-deps-cp312.tar.xz: KvikIO's HTTP and S3 tests will fail on" \
    "ModuleNotFoundError (run bash bench/kvikio-test-deps.sh on the build machine and carry .whl)"
fi
# KvikIO refuses cuFile async I/O without a cuFile config file (a client-side check).
CFG=${CUFILE_ENV_PATH_JSON:-/etc/cufile.json}
[ -f "$CFG" ] || { echo '{}' > "$OUT/cufile.json"; CFG=$OUT/cufile.json; }
F=${FILE:-/tmp/gdio-bench-8g.bin}

kvikio_tests() {
  # The tests find KvikIO's examples at ../examples (test_examples.py).
  rm -rf "$OUT/kt" "$OUT/examples" && cp -r "$root/bench/kvikio-tests" "$OUT/kt"
  cp -r "$root/bench/kvikio-examples" "$OUT/examples"
  ( cd "$OUT/kt" && env LD_PRELOAD="$OURS" KVIKIO_COMPAT_MODE=off CUFILE_ENV_PATH_JSON="$CFG" \
      PYTHONPATH="${PYTHONPATH:-}${TEST_SITE:+:$TEST_SITE}" \
      python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors ${KVIKIO_TESTS:-.} \
      --junitxml="$OUT/kvikio-junit.xml" > "$OUT/kvikio-tests.txt" 2>&1 )
  tail -3 "$OUT/kvikio-tests.txt"
  python3 - "$OUT/kvikio-junit.xml" >> "$log" <<'PY'
import json, sys, xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot()
s = s if s.tag == "testsuite" else s.find("testsuite")
n, f, e, k = (int(s.get(x, 0)) for x in ("tests", "failures", "errors", "skipped"))
print(json.dumps({"test": "kvikio_pytest_compat_off", "tests": n, "failed": f + e, "skipped": k, "passed": n - f - e - k}))
PY
}

# The same tests with no libcufile preloaded and KvikIO's own POSIX path (compat ON): what
# fails here fails without any cuFile library (KVIKIO_TESTS narrows it, as above).
kvikio_tests_plain() {
  rm -rf "$OUT/kt" "$OUT/examples" && cp -r "$root/bench/kvikio-tests" "$OUT/kt"
  cp -r "$root/bench/kvikio-examples" "$OUT/examples"
  ( cd "$OUT/kt" && env KVIKIO_COMPAT_MODE=on PYTHONPATH="${PYTHONPATH:-}${TEST_SITE:+:$TEST_SITE}" \
      python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors ${KVIKIO_TESTS:-.} \
      > "$OUT/kvikio-tests-plain.txt" 2>&1 )
  echo "KvikIO tests, compat ON, no libcufile: $(tail -1 "$OUT/kvikio-tests-plain.txt")"
}

# The HTTP tests as the released wheel logs (see (f) above), compat OFF through our library.
kvikio_http_release() {
  rm -rf "$OUT/kth" && cp -r "$root/bench/kvikio-tests" "$OUT/kth"
  python3 "$root/bench/kvikio-http-release-logging.py" "$OUT/kth/test_http_io.py" || return
  ( cd "$OUT/kth" && env LD_PRELOAD="$OURS" KVIKIO_COMPAT_MODE=off KVIKIO_LOG_LEVEL=WARN \
      CUFILE_ENV_PATH_JSON="$CFG" PYTHONPATH="${PYTHONPATH:-}${TEST_SITE:+:$TEST_SITE}" \
      python3 -m pytest -q -p no:cacheprovider test_http_io.py > "$OUT/kvikio-http-release.txt" 2>&1 )
  echo "KvikIO test_http_io.py, compat OFF through gdio, retry checks on stderr (released wheel's logging): $(tail -1 "$OUT/kvikio-http-release.txt")"
}

torch_gds() {
  [ -f "$F" ] || "$GDIO" make-file "$F" --size 8G
  LD_PRELOAD="$OURS" python3 bench/cufile_torch_gds.py "$OUT/torch" "$F" >> "$log" 2> "$OUT/torch-stderr.txt"
  echo "torch.cuda.gds exit $? (stderr in $OUT/torch-stderr.txt)"
}

perf() {
  [ -f "$F" ] || "$GDIO" make-file "$F" --size 8G
  cat "$F" > /dev/null  # into the page cache
  # PERF_CAPPED=1: also KvikIO OFF on gdio with 4 workers, what the stock /etc/cufile.json's
  # max_io_threads made of gdio's engine before gdio stopped reading that key.
  [ -n "${PERF_CAPPED:-}" ] && env LD_PRELOAD="$OURS" CUFILE_ENV_PATH_JSON="$CFG" GDIO_THREADS=4 \
    python3 bench/cufile_kvikio_read.py off "$F" 16 3 2>> "$OUT/perf-stderr.txt" \
    | sed 's/"compat_mode"/"variant": "gdio capped at 4 workers", "compat_mode"/' >> "$log"
  for t in ${PERF_THREADS:-8 16 32}; do
    env LD_PRELOAD="$OURS" CUFILE_ENV_PATH_JSON="$CFG" python3 bench/cufile_kvikio_read.py off "$F" $t 3 >> "$log" 2>> "$OUT/perf-stderr.txt"
    python3 bench/cufile_kvikio_read.py on "$F" $t 3 >> "$log" 2>> "$OUT/perf-stderr.txt"
    # gdio's engine with KvikIO's shape: 4 MiB tasks, t requests in flight.
    [ -x "$GDIO" ] && "$GDIO" bench --json --file "$F" --mode read --iterations 3 --threads $t --task-size 4M --io-size 4M --queue-depth $t 2>> "$OUT/perf-stderr.txt" \
      | python3 -c "import json,sys; d=json.load(sys.stdin)['results'][0]; d['label']='gdio bench 4M x $t'; d['threads']=$t; print(json.dumps(d))" >> "$log"
  done
}

registered() {
  [ -f "$F" ] || "$GDIO" make-file "$F" --size 8G
  LD_PRELOAD="$OURS" python3 bench/cufile_registered.py "$F" >> "$log" 2>> "$OUT/registered-stderr.txt"
}

nvidia() {
  [ -f "$F" ] || "$GDIO" make-file "$F" --size 8G
  local dev udev
  dev=$(findmnt -no MAJ:MIN -T "$(dirname "$F")" | tr -d ' ')
  udev=/run/udev/data/b$dev
  mkdir -p /run/udev/data && printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n' > "$udev"
  cat "$F" > /dev/null
  CUFILE_ENV_PATH_JSON="$CFG" PEER_LABEL=nvidia python3 bench/cufile_kvikio_read.py off "$F" 16 2 \
    | sed 's/"libcufile": "none"/"libcufile": "nvidia", "cache": "hot"/' >> "$log" 2>> "$OUT/nvidia-stderr.txt"
  sync; echo 3 > /proc/sys/vm/drop_caches
  CUFILE_ENV_PATH_JSON="$CFG" python3 bench/cufile_kvikio_read.py off "$F" 16 0 \
    | sed 's/"libcufile": "none"/"libcufile": "nvidia", "cache": "cold"/' >> "$log" 2>> "$OUT/nvidia-stderr.txt"
  rm -f "$udev"
  cat "$F" > /dev/null
  env LD_PRELOAD="$OURS" CUFILE_ENV_PATH_JSON="$CFG" python3 bench/cufile_kvikio_read.py off "$F" 16 2 \
    | sed 's/"compat_mode"/"cache": "hot", "compat_mode"/' >> "$log" 2>> "$OUT/nvidia-stderr.txt"
  sync; echo 3 > /proc/sys/vm/drop_caches
  env LD_PRELOAD="$OURS" CUFILE_ENV_PATH_JSON="$CFG" python3 bench/cufile_kvikio_read.py off "$F" 16 0 \
    | sed 's/"compat_mode"/"cache": "cold", "compat_mode"/' >> "$log" 2>> "$OUT/nvidia-stderr.txt"
}

for w in $what; do
  case $w in
    kvikio-tests) kvikio_tests ;;
    kvikio-tests-plain) kvikio_tests_plain ;;
    kvikio-http-release) kvikio_http_release ;;
    torch) torch_gds ;;
    perf) perf ;;
    registered) registered ;;
    nvidia) nvidia ;;
    all) kvikio_tests; torch_gds; perf; registered ;;
  esac
done

python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
for r in rows:
    if r.get("test") == "kvikio_pytest_compat_off":
        print(f"KvikIO tests, compat OFF on gdio's libcufile: {r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped (NVIDIA's: 922 failed)")
    elif str(r.get("test", "")).startswith("torch_gds_round") or r.get("test") == "torch_gds_file_bytes":
        print(f"{r['test']:<28} registered={r.get('registered', '-')!s:<5} equal={r['equal']}")
    elif r.get("test") == "torch_gds_load_8g":
        print(f"torch.cuda.gds 8 GiB load    {r['gds_gbps']:.1f} GB/s vs pinned H2D {r['pinned_h2d_gbps']:.1f} GB/s = {r['ratio']:.2f}x (goal >= 0.85) verified={r['verified']}")
for r in rows:
    if r.get("test") == "cufile_read_registered":
        print(f"cuFileRead {r['size']:>8} B registered={r['registered']!s:<5} {r['us_per_call']:.1f} us/call")
cache = [r for r in rows if r.get("cache")]
for r in cache:
    who = "NVIDIA's" if r["libcufile"] == "nvidia" else "gdio's"
    print(f"KvikIO OFF on {who:<8} {r['cache']:<4} {r['gbps']:.2f} GB/s (16 threads)")
by = {}
for r in rows:
    if r.get("variant"):
        print(f"KvikIO OFF on gdio, {r['variant']}: {r['gbps']:.2f} GB/s ({r['threads']} threads)")
    elif r.get("peer") == "kvikio" and not r.get("cache"):
        by.setdefault(r["threads"], {})[r["compat_mode"]] = r["gbps"]
    elif str(r.get("label", "")).startswith("gdio bench 4M"):
        g = r.get("gbps")
        by.setdefault(r["threads"], {})["gdio"] = g
if by:
    print(f"\n{'threads':>7} {'KvikIO OFF on gdio':>19} {'KvikIO compat ON':>17} {'ratio':>6} {'gdio bench':>11} {'OFF/gdio':>9}")
    for t in sorted(by):
        d = by[t]
        off, on, gd = d.get("off"), d.get("on"), d.get("gdio")
        fmt = lambda x: f"{x:.1f}" if isinstance(x, (int, float)) else "-"
        ratio = f"{off / on:.2f}" if off and on else "-"
        r2 = f"{off / gd:.2f}" if off and isinstance(gd, (int, float)) and gd else "-"
        print(f"{t:>7} {fmt(off):>19} {fmt(on):>17} {ratio:>6} {fmt(gd):>11} {r2:>9}")
    print("goals: KvikIO OFF on gdio >= 1.10 x compat ON; >= 0.95 x gdio bench (same shape)")
PY

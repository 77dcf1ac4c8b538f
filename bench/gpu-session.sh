#!/usr/bin/env bash
# One GPU-machine session: the phases named on the command line, in order, each with a time
# limit, every log under $OUT/logs (packed into $OUT/logs.tgz at the end) and one summary table
# on stdout and in $OUT/summary.txt.
#
# usage: bench/gpu-session.sh PHASE...   (from the repository root, on the GPU machine)
# phases: setup tests main micro cufile sweep safetensors python knobs cb cold pinned split probe multi,
#   and any bench/gpu-phase-NAME.sh as NAME (why, knobab, abba, writeab, kvrow, spread, loadab, pyload, pcdma, capi, twogpu, ...)
#   (sweep: the read table unless MODE=write|both, bench/sweep-h200.sh)
# needs (carried from the build machine, see ARCHITECTURE.md "Running on the GPU machine"):
#   .dev/bin/gdio            release CLI            .dev/before/gdio  the CLI before the change
#   .dev/lib/libcufile.so.0  gdio's libcufile       .dev/tests/*      release test binaries
#   .dev/bin/engine_microbench                      .whl/*.whl        peers' (and gdio's) wheels
set -uo pipefail
OUT=${OUT:-/tmp/gdio-session}
L=$OUT/logs
mkdir -p "$L"
S=$OUT/summary.txt
say() { echo "$*" | tee -a "$S"; }
export GDIO=$PWD/.dev/bin/gdio
export LIB=$PWD/.dev/lib/libcufile.so.0
export GDIO_REQUIRE_GPU=1 L S
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >"$L/pip.txt" 2>&1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
[ -n "${SKIP_FILES:-}" ] || for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do
  [ -f "$f" ] || "$GDIO" make-file "$f" --size 8G >/dev/null 2>>"$L/make-file.txt"
done

phase() { # name limit_s command...
  local name=$1 lim=$2; shift 2
  local t0=$SECONDS
  echo ">> $name" >&2
  if declare -F "$1" >/dev/null; then export -f "$1"; set -- bash -c "$1"; fi
  timeout --kill-after=10 "$lim" "$@" >"$L/$name.txt" 2>&1
  local rc=$?
  say "[$name] exit $rc in $((SECONDS - t0)) s"
  return $rc
}

setup() {
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.total,pci.bus_id --format=csv
  lscpu | grep -iE 'model name|socket|numa'
  for b in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do
    b=$(echo "$b" | tr 'A-Z' 'a-z' | sed 's/^0000//; s/^/0000/' | cut -c1-12)
    echo "GPU $b numa_node $(cat /sys/bus/pci/devices/$b/numa_node 2>/dev/null)"
  done
  nvidia-smi topo -m 2>/dev/null | head -8
  "$GDIO" check /tmp /dev/shm
  "$GDIO" check /tmp/gdio-bench-8g.bin --memory device --json
}

tests() {
  local rc=0 t n filter
  for t in .dev/tests/*; do
    filter=; case $t in *gdio_lib) filter=cuda ;; esac
    for n in $("$t" --list $filter 2>/dev/null | grep ': test$' | sed 's/: test$//'); do
      timeout 120 "$t" --exact "$n" --test-threads 1 >"$L/test-$(basename "$t")-$n.log" 2>&1
      local r=$?
      echo "$(basename "$t") $n: $([ $r = 0 ] && echo ok || echo "FAILED (exit $r)")"
      [ $r = 0 ] || rc=1
    done
  done
  # The C program against gdio's header and library, on device memory where a GPU exists.
  local d=/tmp/cufile-c && mkdir -p $d/lib $d/work && cp -f "$LIB" $d/lib/libcufile.so.0 && ln -sf libcufile.so.0 $d/lib/libcufile.so
  cc -std=c11 -O1 -I crates/gdio-cufile/include crates/gdio-cufile/tests/c/api.c -o $d/api -L $d/lib -lcufile -ldl \
    && LD_LIBRARY_PATH=$d/lib $d/api $d/work; echo "C api program exit $?"
  return $rc
}

main_job() {
  for b in .dev/before/gdio "$GDIO"; do
    echo "== $b bench (defaults)"
    "$b" bench --json | python3 -c "
import json,sys; d=json.load(sys.stdin)
for r in d['results']: print(r['op'], r.get('target'), round(r['gbps'],2), 'GB/s verified', r.get('verified'), 'limit', r.get('limit_gbps'))
print('limits', json.dumps(d.get('limits')))"
  done
}

micro() {
  OUT=$L bash bench/engine-microbench.sh .dev/bin/engine_microbench ${MICRO_MEMS:-gpu host}
  # Gathering small reads: off, and on with one copy per piece, against the default above;
  # and the engine before this change (.dev/before/engine_microbench) where carried.
  local shape
  for shape in "4 256 batch" "64 64 batch" "4 256 async"; do
    set -- $shape
    [ -x .dev/before/engine_microbench ] && echo "before: $(.dev/before/engine_microbench gpu $1 $2 3 $3 2>&1 | tail -1)"
    echo "gather off: $(GDIO_GATHER_MAX_PIECES=0 .dev/bin/engine_microbench gpu $1 $2 3 $3 2>&1 | tail -1)"
    echo "gather, one copy per piece: $(GDIO_GATHER_BATCH_COPY=false .dev/bin/engine_microbench gpu $1 $2 3 $3 2>&1 | tail -1)"
  done
}

cufile() {
  OUT=$L/cufile bash bench/cufile-h200.sh ${CUFILE_PARTS:-all}
}

sweep() {
  OUT=$L/sweep MODE=${MODE:-read} THREADS=${THREADS:-8,16,32} ITER=${ITER:-2} bash bench/sweep-h200.sh
}

safetensors() {
  local before=(); [ -x .dev/before/gdio ] && before=(--gdio-before .dev/before/gdio)
  # gdio's wheel for the save-gdio rows (gdio.safetensors.torch.save_file).
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl || return 1
  export PYTHONPATH=/tmp/gdsite:$PYTHONPATH
  python3 bench/safetensors-h200.py --gdio "$GDIO" --out "$L/st" --size-gib "${ST_GIB:-16}" \
    --rows "${ST_ROWS:-verify,tmpfs,ext4-hot,cold,save}" "${before[@]}" ${ST_TORCH:+--gdio-torch} --reps "${ST_REPS:-1}" \
    --peers "${ST_PEERS-safetensors,fastsafetensors,instanttensor,instanttensor-buffered}"
}

python_pkg() {
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl || return 1
  export PYTHONPATH=/tmp/gdsite:$PYTHONPATH
  (cd python/tests && python3 -m pytest -q -p no:cacheprovider . 2>&1 | tail -15)
  python3 bench/python-h200.py --file /dev/shm/gdio-bench-8g.bin --gdio "$GDIO" --out "$L/py" --iterations 2 \
    --futures "${PY_FUTURES:-100000}" --parts "${PY_PARTS:-A,B,C}" 2>&1 | tail -25
}

knobs() { # the default bench under the speed knobs it depends on
  local v
  for v in GDIO_NONE=1 GDIO_GATHER_MAX_PIECES=0 GDIO_COMPLETION_SPIN_US=0 GDIO_COMPLETION_SPIN_US=200; do
    echo "$v: $(env $v "$GDIO" bench --mode read --json | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(round(r['gbps'],2), 'GB/s verified', r['verified'])")"
  done
  echo "before: $(.dev/before/gdio bench --mode read --json | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(round(r['gbps'],2), 'GB/s verified', r['verified'])")"
  timeout 60 .dev/tests/gpu_cuda --exact gpu_stream_ordered_read_runs_between_earlier_and_later_stream_work --test-threads 1 2>&1 | grep 'test result'
}

cb() { # gdio's request-shape table with completion callbacks on (default) and off, one run
  local f v dir
  for dir in ${CB_DIRS-/dev/shm /tmp}; do
    f=$dir/gdio-bench-8g.bin; cat "$f" >/dev/null
    for v in GDIO_COMPLETION_CALLBACKS=true GDIO_COMPLETION_CALLBACKS=false; do
      echo "== $dir $v"
      env $v "$GDIO" bench --sweep --mode read --file "$f" --size "${CB_SIZE:-2G}" --iterations "${ITER:-1}" --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin)
for r in d['results']: print(f\"{r['io_size']:>11} x {r['queue_depth']:<3} {r['pattern']:>6} {r['gbps']:7.2f} GB/s  {r.get('ratio_to_limit') or 0:.2f} x limit  verified {r['verified']}\")"
    done
  done
  for v in ${CB_KNOBS:-GDIO_THREADS=8 GDIO_THREADS=12 GDIO_THREADS=16 GDIO_THREADS=24 GDIO_COMPLETION_CALLBACKS=true GDIO_COMPLETION_CALLBACKS=false}; do
    echo "$v default bench: $(env ${v//,/ } "$GDIO" bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s ({r.get('ratio_to_limit') or 0:.2f} x limit, verified {r['verified']})\" for r in json.load(sys.stdin)['results']))")"
  done
}

cold() { # cold reads from the virtio disk against a plain O_DIRECT read of the same parallelism
  local v
  for v in ${COLD_KNOBS:-GDIO_DIRECT_READS_IN_FLIGHT=2 GDIO_DIRECT_READS_IN_FLIGHT=4}; do
    echo "$v: $(env ${v//,/ } "$GDIO" bench --file /tmp/gdio-bench-8g.bin --mode read --cold --iterations 1 --warmup 0 --io-size 1G --queue-depth 2 --json | python3 -c "
import json,sys; d=json.load(sys.stdin); r=d['results'][0]
print(f\"{r['gbps']:.2f} GB/s cold, {r.get('ratio_to_limit') or 0:.2f} x limit {r.get('limit_gbps')}, direct {r['direct_bytes']>>20} MiB, verified {r['verified']}\")")"
  done
}

pinned() { # what making the bounce buffers costs, each way (crates/gdio/examples/pinned_alloc_microbench.rs)
  local shape
  for shape in ${PINNED_SHAPES:-96,4,12 192,4,24}; do
    .dev/bin/pinned_alloc_microbench ${shape//,/ }
  done
}

split() { # KvikIO compat OFF on gdio under engine knobs (SPLIT_KNOBS), beside compat ON
  local f=/tmp/gdio-bench-8g.bin t v
  cat "$f" >/dev/null
  [ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
  for t in ${SPLIT_THREADS:-8 16 32}; do
    for v in ${SPLIT_KNOBS:-GDIO_NONE=1 GDIO_SPLIT_MIN_BYTES=0}; do
      echo "KvikIO OFF on gdio t$t $v: $(env ${v//,/ } LD_PRELOAD="$LIB" python3 bench/cufile_kvikio_read.py off "$f" $t 3 2>>"$L/split-stderr.txt" \
        | python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(r['gbps'], r.get('verified'))")"
    done
    echo "KvikIO ON t$t: $(python3 bench/cufile_kvikio_read.py on "$f" $t 3 2>>"$L/split-stderr.txt" \
      | python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(r['gbps'], r.get('verified'))")"
  done
}

probe() { # is gdio slower into one GPU than another (CLI bench and a Python pread per GPU)?
  local g
  for g in 0 1; do
    echo "gdio bench gpu:$g: $("$GDIO" bench --target gpu:$g --mode read --json | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(round(r['gbps'],2), 'GB/s verified', r['verified'])")"
  done
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl || return 1
  PYTHONPATH=/tmp/gdsite:$PYTHONPATH python3 bench/gpu-ordinal-probe.py /dev/shm/gdio-bench-8g.bin 0,1
  [ -f /dev/shm/gdio-st/model.safetensors.index.json ] && for g in 0 1; do
    echo "gdio load gpu:$g: $("$GDIO" load /dev/shm/gdio-st/model.safetensors.index.json --target gpu:$g --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['gbps'],2), 'GB/s, transfer', round(d['transfer_seconds'],3), 's')")"
  done
}

multi() { # two GPUs: the checkpoint onto both, beside InstantTensor's 2-rank NCCL load
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl || return 1
  export PYTHONPATH=/tmp/gdsite:$PYTHONPATH
  python3 bench/multigpu-h200.py --gdio "$GDIO" --out "$L/mgpu" --size-gib "${ST_GIB:-16}" --reps "${MG_REPS:-2}" \
    ${MG_ROWS:+--rows "$MG_ROWS"}
}

for p in "$@"; do
  case $p in
    setup) phase setup 120 setup ;;
    tests) phase tests 300 tests; grep -E 'FAILED|C api' "$L/tests.txt" | tee -a "$S"; echo "tests ok: $(grep -c ': ok$' "$L/tests.txt")" | tee -a "$S" ;;
    main) phase main 240 main_job; tee -a "$S" < "$L/main.txt" ;;
    micro) phase micro 240 micro; tee -a "$S" < "$L/micro.txt" ;;
    cufile) phase cufile "${CUFILE_LIMIT:-420}" cufile; tail -25 "$L/cufile.txt" | tee -a "$S" >/dev/null ;;
    sweep) phase sweep "${SWEEP_LIMIT:-540}" sweep; tail -30 "$L/sweep.txt" | tee -a "$S" >/dev/null ;;
    safetensors) phase safetensors "${ST_LIMIT:-420}" safetensors; tail -30 "$L/safetensors.txt" | tee -a "$S" >/dev/null ;;
    knobs) phase knobs 150 knobs; tee -a "$S" < "$L/knobs.txt" ;;
    cold) phase cold 240 cold; tee -a "$S" < "$L/cold.txt" ;;
    cb) phase cb "${CB_LIMIT:-300}" cb; tee -a "$S" < "$L/cb.txt" ;;
    pinned) phase pinned 120 pinned; tee -a "$S" < "$L/pinned.txt" ;;
    split) phase split "${SPLIT_LIMIT:-300}" split; tee -a "$S" < "$L/split.txt" ;;
    probe) phase probe 120 probe; tee -a "$S" < "$L/probe.txt" ;;
    multi) phase multi "${MG_LIMIT:-420}" multi; tail -12 "$L/multi.txt" | tee -a "$S" >/dev/null ;;
    python) phase python "${PY_LIMIT:-300}" python_pkg; tail -45 "$L/python.txt" | tee -a "$S" >/dev/null ;;
    *) [ -f "bench/gpu-phase-$p.sh" ] && phase "$p" 540 bash "bench/gpu-phase-$p.sh" "$L/$p" && tail -30 "$L/$p.txt" | tee -a "$S" >/dev/null ;;
  esac
done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs 2>/dev/null
cat "$S"

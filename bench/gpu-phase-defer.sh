#!/usr/bin/env bash
# `defer_gpu_init` on the GPU machine, before its default may change:
#   host   safetensors loads onto the CPU that read (`safetensors_map_host` false: the route of
#          every file not in the page cache) of a 0.2 and a 2.2 GB file in /dev/shm, fresh
#          processes, the key off and on alternating, beside the package: the ~0.3 s fixed cost
#          of session 18 should be gone with the key on
#   gpu    what it costs a GPU user: the default `gdio bench` and a `gdio load` into GPU 0, off
#          and on alternating (the runtime is found at the first GPU call instead of at start)
#   check  the Python GPU tests, the C ABI program and KvikIO compat OFF through gdio's
#          libcufile.so.0 with the key on (every GPU path finds the runtime lazily)
# usage (through bench/gpu-session.sh defer): bench/gpu-phase-defer.sh OUTDIR [PARTS] [REPS]
set -uo pipefail
out=${1:-/tmp/defer}; parts=${2:-host gpu check}; reps=${3:-3}
mkdir -p "$out"
# gdio's wheel of this build (the peers' wheels, the safetensors package among them, are on
# PYTHONPATH from gpu-session.sh).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl || exit 1
export PYTHONPATH=/tmp/gdsite${PYTHONPATH:+:$PYTHONPATH}
small=/dev/shm/gdio-host-small.safetensors big=/dev/shm/gdio-host-big.safetensors
[ -f $small ] || python3 bench/make_host_file.py $small 200 360
[ -f $big ] || python3 bench/make_host_file.py $big 700 1024
if [[ $parts == *host* ]]; then
  for rep in $(seq "$reps"); do
    for f in $small $big; do
      for d in 0 1; do
        echo "rep $rep $(basename $f) defer=$d: $(GDIO_DEFER_GPU_INIT=$d GDIO_SAFETENSORS_MAP_HOST=0 python3 bench/host_load.py gdio $f read 2>>"$out/stderr.txt")"
      done
      echo "rep $rep $(basename $f) package: $(python3 bench/host_load.py package $f 2>>"$out/stderr.txt")"
    done
  done
fi
if [[ $parts == *gpu* ]]; then
  ck=/dev/shm/gdio-st/model.safetensors.index.json
  for rep in $(seq "$reps"); do
    for d in 0 1; do
      echo "rep $rep default bench defer=$d: $(GDIO_DEFER_GPU_INIT=$d "$GDIO" bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s (verified {r['verified']})\" for r in json.load(sys.stdin)['results']))")"
      [ -f $ck ] && echo "rep $rep gdio load gpu:0 defer=$d: $(GDIO_DEFER_GPU_INIT=$d "$GDIO" load $ck --target gpu:0 --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['gbps']:.2f} GB/s in {d['seconds']:.3f} s\")")"
    done
  done
fi
if [[ $parts == *check* ]]; then
  export GDIO_DEFER_GPU_INIT=1
  (cd python/tests && python3 -m pytest -q -p no:cacheprovider test_gpu.py test_defer_gpu_init.py test_safetensors.py >"$out/pytest.txt" 2>&1; echo "pytest with defer on: exit $? ($(tail -1 "$out/pytest.txt"))")
  d=/tmp/cufile-c-defer && mkdir -p $d/lib $d/work && cp -f "$LIB" $d/lib/libcufile.so.0 && ln -sf libcufile.so.0 $d/lib/libcufile.so
  cc -std=c11 -O1 -I crates/gdio-cufile/include crates/gdio-cufile/tests/c/api.c -o $d/api -L $d/lib -lcufile -ldl \
    && LD_LIBRARY_PATH=$d/lib $d/api $d/work >"$out/capi.txt" 2>&1; echo "C api program with defer on: exit $?"
  echo "KvikIO OFF t8 on gdio, defer on: $(LD_PRELOAD="$LIB" python3 bench/cufile_kvikio_read.py off /tmp/gdio-bench-8g.bin 8 3 2>>"$out/stderr.txt" | tail -1)"
fi

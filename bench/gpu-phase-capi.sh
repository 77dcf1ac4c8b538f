#!/usr/bin/env bash
# The C ABI program (crates/gdio-cufile/tests/c/api.c) against gdio's libcufile on the GPU
# machine, in variants (the stream of the device part blocking or not; the copy after the
# stream-ordered read into pageable memory queued on the stream, or made after synchronizing),
# each with a time limit. A run that hangs gets the step it was in (the program prints each
# step), its threads' kernel stacks, and with gdb their user stacks, under $1.
#   bench/gpu-phase-capi.sh LOGDIR     (LIB: gdio's libcufile.so.0, as gpu-session.sh sets it)
set -uo pipefail
L=${1:-/tmp/capi}
mkdir -p "$L"
LIB=${LIB:-.dev/lib/libcufile.so.0}
d=/tmp/cufile-capi
mkdir -p $d/lib $d/work
cp -f "$LIB" $d/lib/libcufile.so.0 && ln -sf libcufile.so.0 $d/lib/libcufile.so
for v in "default:" "nonblocking-stream:-DAPI_STREAM_FLAGS=1" "no-pageable-async:-DAPI_NO_PAGEABLE_ASYNC" \
         "both:-DAPI_STREAM_FLAGS=1 -DAPI_NO_PAGEABLE_ASYNC"; do
  name=${v%%:*} flags=${v#*:}
  # shellcheck disable=SC2086
  cc -std=c11 -O1 -g $flags -I crates/gdio-cufile/include crates/gdio-cufile/tests/c/api.c \
    -o $d/api-$name -L $d/lib -lcufile -ldl || { echo "$name: does not compile"; continue; }
  rm -rf "${d:?}"/work/*
  CUFILE_LOGGING_LEVEL=${CAPI_LOG:-ERROR} LD_LIBRARY_PATH=$d/lib $d/api-$name $d/work >"$L/capi-$name.txt" 2>&1 &
  pid=$!
  for _ in $(seq 1 ${CAPI_WAIT_HALF_S:-40}); do sleep 0.5; kill -0 $pid 2>/dev/null || break; done
  if kill -0 $pid 2>/dev/null; then
    echo "$name: HUNG in step: $(grep '^api:' "$L/capi-$name.txt" | tail -1)"
    for t in /proc/$pid/task/*; do
      echo "== $(cat "$t/comm") $(basename "$t") wchan=$(cat "$t/wchan" 2>/dev/null)"
      head -12 "$t/stack" 2>/dev/null
    done >"$L/capi-$name-stacks.txt"
    command -v gdb >/dev/null && gdb -batch -p $pid -ex "thread apply all bt 16" >"$L/capi-$name-gdb.txt" 2>&1
    kill -9 $pid
    wait $pid 2>/dev/null
  else
    wait $pid
    echo "$name: exit $? ($(tail -1 "$L/capi-$name.txt"))"
  fi
done

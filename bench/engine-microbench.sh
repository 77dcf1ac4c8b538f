#!/usr/bin/env bash
# Per-request cost of the engine: small requests, many in flight, from a file in the page cache.
# Usage: bench/engine-microbench.sh BIN [MEM...]   (BIN: the engine_microbench example binary,
#   built with `cargo build --release -p gdio --example engine_microbench`; MEM: host sim gpu)
# Prints one line per shape and writes JSON lines to $OUT/engine-microbench.jsonl.
# Engine knobs come from the environment, e.g. GDIO_GATHER_MAX_PIECES=0 (gathering off) or
# GDIO_GATHER_BATCH_COPY=false (one copy call per gathered piece); `batch` rows verify every byte.
set -euo pipefail
bin=${1:?path to engine_microbench}
shift
mems=("${@:-host}")
out=${OUT:-bench/results}
mkdir -p "$out"
for mem in "${mems[@]}"; do
  for shape in "4 1 sync" "4 256 sync" "4 256 async" "4 256 batch" "4 64 batch" "64 1 sync" \
               "64 64 sync" "64 64 async" "64 64 batch" "1024 32 async" "4096 16 async"; do
    set -- $shape
    line=$("$bin" "$mem" "$1" "$2" 3 "$3")
    echo "$line"
    reqs=$(echo "$line" | sed -E 's/.*: ([0-9]+) (req\/s|IOPS).*/\1/')
    gbs=$(echo "$line" | sed -E 's/.*[ (]([0-9.]+) GB\/s.*/\1/')
    printf '{"mem":"%s","kib":%s,"in_flight":%s,"mode":"%s","req_per_s":%s,"gb_per_s":%s,"gather_max_pieces":"%s","gather_batch_copy":"%s","threads":"%s"}\n' \
      "$mem" "$1" "$2" "$3" "$reqs" "$gbs" "${GDIO_GATHER_MAX_PIECES:-default}" \
      "${GDIO_GATHER_BATCH_COPY:-default}" "${GDIO_THREADS:-default}" >> "$out/engine-microbench.jsonl"
  done
done

#!/usr/bin/env bash
# Sweeps the gathering knobs for small random reads into GPU memory (or the simulated GPU).
# Usage: bench/gather-sweep.sh BIN [MEM] [REPEATS]   (BIN: engine_microbench; MEM: gpu|sim|host)
# For every shape and setting it runs REPEATS (default 3) times and prints the median; JSON
# lines go to $OUT/gather-sweep.jsonl. Settings: gathering off (GDIO_GATHER_MAX_PIECES=0),
# on with 8/16/32/64 pieces per group, and on with one copy call per piece instead of
# cuMemcpyBatchAsync (GDIO_GATHER_BATCH_COPY=false).
set -euo pipefail
bin=${1:?path to engine_microbench}
mem=${2:-gpu}
reps=${3:-3}
out=${OUT:-bench/results}
mkdir -p "$out"
settings=("0 true" "8 true" "16 true" "32 true" "64 true" "64 false")
printf '%-16s %-8s %-8s %12s\n' shape pieces batchcp "median/s"
for shape in "4 256 batch" "4 64 batch" "4 256 async" "4 64 async" "64 64 batch" "64 64 async"; do
  set -- $shape
  for s in "${settings[@]}"; do
    read -r pieces bc <<<"$s"
    vals=()
    for _ in $(seq "$reps"); do
      line=$(GDIO_GATHER_MAX_PIECES=$pieces GDIO_GATHER_BATCH_COPY=$bc "$bin" "$mem" "$1" "$2" 3 "$3")
      vals+=("$(echo "$line" | sed -E 's/.*: ([0-9]+) (req\/s|IOPS).*/\1/')")
    done
    med=$(printf '%s\n' "${vals[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '%-16s %-8s %-8s %12s\n' "$1K x $2 $3" "$pieces" "$bc" "$med"
    printf '{"mem":"%s","kib":%s,"in_flight":%s,"mode":"%s","gather_max_pieces":%s,"gather_batch_copy":%s,"median_per_s":%s,"runs":"%s"}\n' \
      "$mem" "$1" "$2" "$3" "$pieces" "$bc" "$med" "${vals[*]}" >> "$out/gather-sweep.jsonl"
  done
done

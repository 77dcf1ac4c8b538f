#!/usr/bin/env bash
# Phase `hybrid`: can a few threads that DMA straight out of the page cache (registered
# mappings, one memory touch per byte) add to the bounce threads (pread + copy, three touches)
# that the host's memory holds back? bench/pagecache-dma-probe.c, modes bouncehp and hybrid, on
# the 8 GiB tmpfs and ext4 files (hot), HYBRID_REPS times, for each bounce-thread count in
# HYBRID_BOUNCE and each "register threads:MiB per chunk" in HYBRID_CFGS.
#   bash bench/gpu-phase-hybrid.sh LOGDIR
set -uo pipefail
mkdir -p "$1"
cc -O2 -pthread bench/pagecache-dma-probe.c -o "$1/pcprobe" -ldl || exit 1
for f in ${HYBRID_FILES:-/dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin}; do
  cat "$f" >/dev/null
  echo "== $f"
  for rep in $(seq "${HYBRID_REPS:-2}"); do
    for t in ${HYBRID_BOUNCE:-12 10}; do
      timeout 60 "$1/pcprobe" "$f" 4 "$t" bouncehp || echo "probe exit $?"
      for c in ${HYBRID_CFGS:-1:64 2:64 1:256 2:16 4:64}; do
        HYBRID_REG=${c%%:*} HYBRID_MIB=${c##*:} timeout 60 "$1/pcprobe" "$f" 4 "$t" hybrid || echo "probe exit $?"
      done
    done
  done
done

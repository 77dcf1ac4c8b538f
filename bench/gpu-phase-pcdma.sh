#!/usr/bin/env bash
# Phase `pcdma`: can the GPU copy straight out of the page cache faster than bounce buffers
# carry it? Runs bench/pagecache-dma-probe.c on the 8 GiB tmpfs and ext4 files (hot) for each
# chunk:threads shape in PCDMA_SHAPES (chunk in MiB, or KiB as 512k), each count of buffers per
# thread in PCDMA_NBUFS (the bounce modes), each stream count in PCDMA_NSTREAMS (0: a stream
# per thread; N: the threads share N), each marker in PCDMA_MARKERS (what follows each copy of
# the bounce modes: event, eventwv, wv; see the probe) and each mode in PCDMA_MODES.
#   bash bench/gpu-phase-pcdma.sh LOGDIR
set -uo pipefail
mkdir -p "$1"
cc -O2 -pthread bench/pagecache-dma-probe.c -o "$1/pcprobe" -ldl || exit 1
for f in ${PCDMA_FILES:-/dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin}; do
  cat "$f" >/dev/null
  echo "== $f"
  for shape in ${PCDMA_SHAPES:-4:12 16:12 64:4 64:8 256:4}; do
    for nbuf in ${PCDMA_NBUFS:-2}; do for ns in ${PCDMA_NSTREAMS:-0}; do for mk in ${PCDMA_MARKERS:-event}; do
      MARKER=$mk NBUF=$nbuf NSTREAMS=$ns timeout 120 "$1/pcprobe" "$f" "${shape%%:*}" "${shape##*:}" ${PCDMA_MODES:-pinned bounce mapeach mapwhole mappipe regonce} \
        || echo "probe $f $shape exit $?"
    done; done; done
  done
done

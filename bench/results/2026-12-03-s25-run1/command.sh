#!/usr/bin/env bash
# Session 25 run 1: the GPU tests on session 24's final build (inline_max_callers, the warm-up's
# own-stream lane), the C api program and the Python tests on the GPU; the pinned buffers'
# flags (the probe's cuMemHostAlloc copies ran 3 % faster than registered huge pages in session
# 22 but the engine's did not: the probe passes flags 0, the engine PORTABLE | DEVICEMAP);
# KvikIO compat OFF through gdio's libcufile (issue 9) with registered huge pages and with
# cuMemHostAlloc buffers, each with gdio's flags and with flags 0 (.dev/before: the same build
# with flags 0); session 24's unrun run 7 (the crowd rule).
O=$OUT; mkdir -p $O
OUT=$O/s timeout 150 bash bench/gpu-session.sh tests capi >$O/session.txt 2>&1
cat $O/s/summary.txt; grep -h "FAILED\|C api" $O/s/logs/tests.txt | head; cat $O/s/logs/capi.txt | tail -5
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 120 python3 -m pytest -q -p no:cacheprovider . >$O/pytest.txt 2>&1; echo "pytest exit $?: $(tail -1 $O/pytest.txt)"; grep -E '^(FAILED|ERROR)' $O/pytest.txt | head)
f=/tmp/gdio-bench-8g.bin
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P="timeout 30 /tmp/pcprobe"
for rep in 1 2; do
  for mode in pinnedq bouncehp; do
    for a in host hp; do
      for fl in 0 3; do
        mk=none; [ $mode = bouncehp ] && mk=event
        echo "rep $rep $mode $a flags $fl: $(PINALLOC=$a PINFLAGS=$fl MARKER=$mk NBUF=2 NSTREAMS=1 $P $f 4 12 $mode 2>&1 | tail -1 | cut -c1-90)"
      done
    done
  done
done 2>&1 | tee $O/probe.txt
OUT=$O/k KNOBAB_PARTS=kvikio,bench KNOBAB_THREADS="8 16" KNOBAB_SHAPES="4M:16" \
  KNOBAB_SETTINGS="GDIO_NONE=1 BEFORE=1 GDIO_PINNED_HUGE_PAGES=false BEFORE=1,GDIO_PINNED_HUGE_PAGES=false" KNOBAB_REPS=2 \
  SKIP_FILES=1 timeout 280 bash bench/gpu-session.sh knobab > $O/knobab.txt 2>&1
cat $O/k/logs/knobab.txt
f=/dev/shm/g1.bin; [ -f $f ] || .dev/bin/gdio make-file $f --size 1G >/dev/null
for rep in 1 2; do
  for shape in "64K 64" "64K 16" "256K 32" "256K 16" "4K 8"; do
    set -- $shape
    for v in GDIO_NONE=1 GDIO_INLINE_MAX_BYTES=0 GDIO_INLINE_MAX_CALLERS=0; do
      r=$(env $v timeout 30 .dev/bin/gdio bench --file $f --mode read --io-size $1 --queue-depth $2 --iterations 2 2>&1)
      echo "rep $rep $1 x $2 | $v | $(echo "$r" | grep -oE '[0-9.]+ GB/s' | head -1) | $(echo "$r" | grep -oE '[0-9]+ (requests run by their callers|small ones sent)' | head -2 | tr '\n' ' ')"
    done
  done
done 2>&1 | tee $O/crowd.txt

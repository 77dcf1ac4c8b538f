#!/usr/bin/env bash
# Session 37 run 6: 1. gdio's Python suite on the GPU with the reasons of its skips (-rs);
# 2. what page-cache pins registered in idle time cost a training-like loop's own GPU work
# (bench/pins_compute_cost.py: each epoch KvikIO compat OFF through gdio reads the 8 GiB file
# at 16 threads, then 1.5 s of timed compute steps, a matmul and 200 small launches each),
# pins 16 GiB against 0 (the default), ABBA, ext4 page cache then tmpfs.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
el setup
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 120 python3 -m pytest -q -rs -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -2 $O/pytest.txt; grep -E '^(FAILED|ERROR|SKIPPED)' $O/pytest.txt | head)
el pytest
sleep 2
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do
  cat $f > /dev/null
  for pins in 17179869184 0 0 17179869184; do
    echo "$f pins $pins:"
    GDIO_PAGE_CACHE_PINS_MAX_BYTES=$pins LD_PRELOAD=$LIB PYTHONPATH=/tmp/site timeout 60 python3 bench/pins_compute_cost.py $f 16 6 2>>$O/pins-stderr.txt
  done
done | tee $O/pins.txt
el total

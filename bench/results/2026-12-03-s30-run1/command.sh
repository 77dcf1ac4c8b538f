#!/usr/bin/env bash
# Session 30 run 1: session 29's final build (032eca5, `gather_adjacent_runs`) on the GPU for the
# first time: the GPU test binaries and the C program, KvikIO 26.10's suite compat OFF through
# gdio's libcufile and the torch.cuda.gds checks, then gathered groups in runs against piece by
# piece (`GDIO_GATHER_ADJACENT_RUNS=false`), alternating: writes into a 512 MiB ext4 file (and
# every small write gathered, `GDIO_GATHER_WRITE_DISK_MIN_BYTES=0`, now that runs join them),
# writes into a 512 MiB tmpfs file, reads from the 8 GiB tmpfs and ext4 files; then issue 9's
# KvikIO row with the time left.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; grep -c ": ok" $O/t/logs/tests.txt; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 120 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -8 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | head -10
el cufile
export GDIO=$PWD/.dev/bin/gdio
OUT=$O/we SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_FILE=/tmp/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_ADJACENT_RUNS=false GDIO_GATHER_WRITE_DISK_MIN_BYTES=0" \
  WRITEAB_SHAPES="64K:64:seq 16K:64:seq 4K:64:random" \
  timeout 110 bash bench/gpu-session.sh writeab > $O/writeab-ext4-session.txt 2>&1
grep -E "^rep|^test" $O/we/logs/writeab.txt | tee $O/writeab-ext4.txt
el writeab-ext4
OUT=$O/wt SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_FILE=/dev/shm/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_ADJACENT_RUNS=false" \
  WRITEAB_SHAPES="64K:64:seq 16K:64:seq 4K:64:random" \
  timeout 70 bash bench/gpu-session.sh writeab > $O/writeab-tmpfs-session.txt 2>&1
grep -E "^rep" $O/wt/logs/writeab.txt | tee $O/writeab-tmpfs.txt
el writeab-tmpfs
for fs in tmpfs ext4; do
  f=/dev/shm/gdio-bench-8g.bin; [ $fs = ext4 ] && f=/tmp/gdio-bench-8g.bin
  OUT=$O/r$fs SKIP_FILES=1 WHY_FILE=$f WHY_REPS=2 WHY_DEFAULT_BENCH=0 \
    WHY_SETTINGS="GDIO_NONE=1 GDIO_GATHER_ADJACENT_RUNS=false" WHY_SHAPES="64K:64 16K:64 4K:64:random" \
    timeout 80 bash bench/gpu-session.sh why > $O/reads-$fs-session.txt 2>&1
  grep -E "^rep" $O/r$fs/logs/why.txt | sed "s/^/$fs /" | tee -a $O/reads.txt
done
el reads
left=$(( 560 - ($(date +%s) - T0) ))
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_BUDGET_S=$(( left - 80 )) PYTHONPATH=/tmp/site timeout $left bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el total

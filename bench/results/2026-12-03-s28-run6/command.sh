#!/usr/bin/env bash
# Session 28 run 6: the build with `gather_write_disk_min_bytes` (64 KiB). The GPU tests of
# gathered writes, then small writes on its defaults into ext4 and into tmpfs (one rep each:
# 4 KiB random writes should be gathered into tmpfs only, 64 KiB ones into both).
O=$OUT; mkdir -p $O
timeout 60 .dev/tests/gpu_cuda gathered --test-threads 1 2>&1 | grep -E "^test |test result" | tee $O/tests.txt
for file in /tmp/gdio-writeab.bin /dev/shm/gdio-writeab.bin; do
  OUT=$O/w-$(basename $(dirname $file)) SKIP_FILES=1 WRITEAB_REPS=1 WRITEAB_FILE=$file WRITEAB_SETTINGS="GDIO_NONE=1" \
    WRITEAB_SHAPES="4K:64:random 64K:64:seq" timeout 70 bash bench/gpu-session.sh writeab > /dev/null 2>&1
  grep -E "^rep" $O/w-$(basename $(dirname $file))/logs/writeab.txt | sed "s|^|$file |"
done | tee $O/writeab.txt

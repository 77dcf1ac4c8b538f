#!/usr/bin/env bash
# Session 28 run 4: the new `kvrow` phase (issue 9's row beside the ceilings, three reps), then
# small random writes into ext4, gathered and not, three more reps (run 3's open question).
O=$OUT; mkdir -p $O
T0=$(date +%s)
f=/tmp/gdio-bench-8g.bin; [ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 timeout 260 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow/kvrow.txt
echo "kvrow done after $(( $(date +%s) - T0 )) s"
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=3 WRITEAB_FILE=/tmp/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITES=false" WRITEAB_SHAPES="4K:64:random 16K:32:random" \
  timeout 150 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep" $O/w/logs/writeab.txt | tee $O/writeab.txt
echo "total $(( $(date +%s) - T0 )) s"

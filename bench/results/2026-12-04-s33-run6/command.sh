#!/usr/bin/env bash
# Session 33 run 6 (the command line as run, on the machine run 5 left warm): the completion
# watcher off against the defaults, four more reps in balanced order, 16 threads only.
O=$OUT; OUT=$O/a SKIP_FILES=1 ABBA_REPS=4 ABBA_BUDGET_S=60 ABBA_SHAPES=" " ABBA_THREADS=16 ABBA_PASSES=3 ABBA_SETTINGS="GDIO_COMPLETION_WATCHER=false GDIO_NONE=1" timeout 100 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1; cat $O/a/logs/abba/abba.txt | tee $O/stdout.txt

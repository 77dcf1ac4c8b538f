#!/usr/bin/env bash
# Session 48 run 1 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s48-run1/command.sh`),
# the build of session 47's final commit 8a45f43 (the steal lines), carried in .dev/:
# (1) the default `gdio bench` once: which host type this is (fast H100, slow H100, H200) and
#     the new steal line;
# (2) ABBA of `completion_spin_us` 1000 (the default) against 0 and 200 at 4, 8, 16 threads and
#     `gdio bench` 4 MiB x 4/8/16 on the same ext4 file, three reps, each row with the
#     hypervisor's steal: on the slow H100 host steal grew with busy CPUs (6.6-20.3 % at twelve
#     to sixteen readers, session 47 run 3) while gdio's idle workers and callers poll up to
#     1 ms; does polling less give KvikIO compat OFF its lead over compat ON back there?
# Logs tarred under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
lscpu | grep -iE 'model name|^cpu\(s\)'
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
echo "== file ready ($((SECONDS - t0)) s)"
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -32) > $O/default-bench.txt
grep -E "^(read|write) |host side|hypervisor|moved" $O/default-bench.txt | cut -c1-200
echo "== default bench ($((SECONDS - t0)) s)"
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4 8 16" ABBA_SHAPES="4M:4 4M:8 4M:16" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_COMPLETION_SPIN_US=1000 GDIO_COMPLETION_SPIN_US=0 GDIO_COMPLETION_SPIN_US=200" \
  ABBA_REPS=3 ABBA_PASSES=3 ABBA_BUDGET_S=$(( 400 - (SECONDS - t0) )) \
  timeout $(( 570 - (SECONDS - t0) )) bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cut -c1-170 $O/a/logs/abba.txt 2>/dev/null || tail -20 $O/a/logs/abba.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a

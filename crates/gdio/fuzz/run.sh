#!/usr/bin/env bash
# Builds one libFuzzer target on stable Rust and fuzzes it for SECONDS, then merges what it
# found (minimized) back into corpus/TARGET. See README.md.
#
#   crates/gdio/fuzz/run.sh header 600
#   crates/gdio/fuzz/run.sh index 600 -max_len=8192     # extra args go to libFuzzer
#   crates/gdio/fuzz/run.sh config 600
#
# Environment: CARGO_TARGET_DIR (default: crates/gdio/fuzz/target, git-ignored),
# NICE (default 10), RSS_MB (default 2048).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 header|index|config SECONDS [libFuzzer args...]" >&2
    exit 2
fi
target=$1
secs=$2
shift 2
case $target in
    header | index | config) ;;
    *) echo "unknown target $target (header, index, config)" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
nice=${NICE:-10}
triple=$(rustc -vV | sed -n 's/^host: //p')

# What cargo-fuzz passes, minus its nightly-only sanitizer flags: SanitizerCoverage with
# inline 8-bit counters, PC table and comparison tracing (libFuzzer's feedback), the `fuzzing`
# cfg, debug assertions and overflow checks. `--target` keeps these flags off build scripts
# and proc macros.
export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"

nice -n "$nice" cargo build --release --locked --target "$triple" --bin "$target"
bin=$CARGO_TARGET_DIR/$triple/release/$target

scratch=$here/scratch/$target
mkdir -p "$scratch" "$here/artifacts/$target"
log=$here/scratch/$target.log

# New inputs go to the scratch folder (the first one); corpus/TARGET only seeds.
set +e
nice -n "$nice" "$bin" \
    -max_total_time="$secs" -rss_limit_mb="${RSS_MB:-2048}" -timeout=10 \
    -print_final_stats=1 -dict="$here/dict/$target.dict" \
    -artifact_prefix="$here/artifacts/$target/" "$@" \
    "$scratch" "$here/corpus/$target" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# Keep only inputs that add coverage to the committed corpus.
nice -n "$nice" "$bin" -merge=1 -rss_limit_mb="${RSS_MB:-2048}" \
    "$here/corpus/$target" "$scratch" 2>&1 | tail -n 3

echo "fuzz exit status $status; log $log; crashes (if any) in artifacts/$target/"
ls -l "$here/artifacts/$target/"
exit "$status"

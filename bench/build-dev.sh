#!/usr/bin/env bash
# Builds everything a GPU-machine session carries into .dev/ (see ARCHITECTURE.md "Running on
# the GPU machine"): the release CLI, the engine and pinned-memory microbenchmarks (bin/),
# gdio's libcufile.so.0 (lib/), the release test binaries that need a GPU (tests/: gpu_cuda,
# the library's unit tests as gdio_lib, safetensors), and the Python wheel (wheel/). Binaries
# are stripped.
#   bench/build-dev.sh [--no-wheel]
# The build before a change goes into .dev/before/ by hand (a worktree at the old commit).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p gdio-cli -p gdio-cufile
cargo build --release --locked -p gdio --example engine_microbench --example pinned_alloc_microbench \
  --example multi_gpu_probe
mkdir -p .dev/bin .dev/lib .dev/tests
install -s target/release/gdio target/release/examples/engine_microbench \
  target/release/examples/multi_gpu_probe \
  target/release/examples/pinned_alloc_microbench .dev/bin/
install -s target/release/libcufile.so .dev/lib/libcufile.so.0
# Test binaries: the JSON messages of `cargo test --no-run` name each executable.
cargo test --release --locked -p gdio --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil, subprocess
want = {("gdio", "lib"): "gdio_lib", ("gpu_cuda", "test"): "gpu_cuda", ("safetensors", "test"): "safetensors"}
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    key = (m["target"]["name"], m["target"]["kind"][0])
    if key in want:
        dst = ".dev/tests/" + want[key]
        shutil.copy(m["executable"], dst)
        subprocess.run(["strip", dst], check=True)
        print("test binary", dst)
'
[ "${1:-}" = --no-wheel ] || bash bench/build-python-wheel.sh .dev/wheel
ls -l .dev/bin .dev/lib .dev/tests

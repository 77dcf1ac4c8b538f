#!/usr/bin/env bash
# Builds the gdio Python wheel for the GPU machine (which has no cargo): one abi3 wheel
# (CPython >= 3.11, so 3.12 there) for this CPU architecture, release build, Cargo.lock
# respected. CUDA is loaded at run time, so the same wheel serves CUDA 12 and 13.
#   bench/build-python-wheel.sh [OUT_DIR]     (default target/wheels)
# Then there: pip install --no-deps gdio-*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-target/wheels}")"
venv="${GDIO_WHEEL_VENV:-target/wheel-venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
mkdir -p "$out" && rm -f "$out"/gdio-*.whl
"$venv/bin/python" -m pip install -q "maturin>=1.9,<2"
(cd python && "../$venv/bin/maturin" build --release --locked -o "$out")
ls -l "$out"/gdio-*.whl

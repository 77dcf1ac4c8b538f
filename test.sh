#!/usr/bin/env bash
# Every test: Rust (cargo test --workspace: the library, the CLI, the C ABI) and Python (the
# package built with pip into a virtualenv, then pytest). GPU tests skip without a GPU and
# fail instead when GDIO_REQUIRE_GPU=1.
#   ./test.sh           all
#   ./test.sh rust      Rust only
#   ./test.sh python    Python only
# Needs: Rust, Python ≥ 3.11 with venv, a C compiler. The venv lives in target/py-venv
# (GDIO_VENV to change); pip fetches maturin, pytest and numpy from PyPI the first time.
set -euo pipefail
cd "$(dirname "$0")"
what="${1:-all}"

if [ "$what" = all ] || [ "$what" = rust ]; then
  cargo test --workspace --locked
fi

if [ "$what" = all ] || [ "$what" = python ]; then
  venv="${GDIO_VENV:-target/py-venv}"
  py="${PYTHON:-python3}"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q pytest numpy safetensors
  # The same route as `pip install ./python`, with a debug build (quicker than release).
  "$venv/bin/python" -m pip install -q --force-reinstall --no-deps ./python \
    --config-settings=build-args="--profile=dev"
  # Run from the tests directory so the source tree's python/gdio does not shadow the
  # installed package.
  rc=0
  (cd python/tests && "../../$venv/bin/python" -m pytest -q -p no:cacheprovider .) || rc=$?
  case $rc in
    0) ;;
    5) echo "pytest collected no tests: the Python tests are missing" >&2; exit 1 ;;
    *) echo "pytest failed (exit status $rc)" >&2; exit 1 ;;
  esac
fi

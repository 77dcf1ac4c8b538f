#!/usr/bin/env bash
# safetensors 0.8.0's own Python tests (bench/safetensors-tests) with gdio in the safetensors
# package's place: a package `safetensors` that re-exports gdio.safetensors
# (bench/safetensors-as-gdio/). gdio must be importable (pip install ./python, or PYTHONPATH),
# with NumPy and, for most modules, torch.
#   bash bench/safetensors-as-gdio.sh [PYTEST_ARGS...] [MODULES...]   (default: the torch and
#   NumPy modules)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r bench/safetensors-as-gdio/safetensors "$work/"
# fsspec for test_handle.py: from .whl where it is there (the GPU machine has no network), else
# PyPI; without it that test fails on its import.
if ls .whl/fsspec-*.whl >/dev/null 2>&1; then
  $py -m pip install -q --no-index --no-deps --target "$work/deps" .whl/fsspec-*.whl
else
  $py -m pip install -q --no-deps --target "$work/deps" fsspec || true
fi
cp -r bench/safetensors-tests "$work/tests"
# From the tests' parent, as the package's CI runs them (they write ./tests/data/...).
cd "$work"
args=()
for a in "$@"; do case $a in test_*) args+=("tests/$a") ;; *) args+=("$a") ;; esac; done
case " ${args[*]-} " in *.py\ *|*.py::*) ;; *) args+=(tests/test_simple.py tests/test_pt_comparison.py \
  tests/test_pt_model.py tests/test_multithreaded.py tests/test_threadable.py tests/test_handle.py) ;; esac
PYTHONPATH="$work:$work/deps${PYTHONPATH:+:$PYTHONPATH}" $py -m pytest -q -p no:cacheprovider "${args[@]}"

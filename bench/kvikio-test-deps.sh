#!/usr/bin/env bash
# Packs what KvikIO's HTTP and S3 tests import (boto3, moto with its server, RangeHTTPServer;
# the GPU machine has none of them and reaches no package index) for the GPU machine's Python
# (3.12) into .whl/kvikio-test-deps-cp312.tar.xz; bench/cufile-h200.sh unpacks it into the
# site directory it puts in front of PYTHONPATH. botocore keeps only the service models the
# tests touch (s3, s3control, sts, iam), which makes the archive 12 MB instead of 40.
#   bench/kvikio-test-deps.sh        (repo root, on a machine that reaches PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip_for_312=(--python-version 3.12 --only-binary=:all: --platform manylinux2014_x86_64
  --platform manylinux_2_28_x86_64 --platform any)
python3 -m pip download -q "${pip_for_312[@]}" -d "$work/all" "moto[server]" boto3 rangehttpserver
mkdir -p "$work/sel"
for p in boto3 botocore s3transfer jmespath python_dateutil six urllib3 moto responses requests \
  certifi charset_normalizer idna xmltodict werkzeug markupsafe jinja2 cryptography cffi \
  pycparser flask flask_cors itsdangerous blinker click pyyaml rangehttpserver py_partiql_parser; do
  cp "$work/all/$p"-*.whl "$work/sel/"
done
python3 -m pip install -q --no-deps --no-compile "${pip_for_312[@]}" --target "$work/site" \
  "$work"/sel/*.whl
for d in "$work"/site/botocore/data/*/; do
  case "$(basename "$d")" in s3|s3control|sts|iam) ;; *) rm -rf "$d" ;; esac
done
mkdir -p .whl
tar -C "$work/site" -cJf .whl/kvikio-test-deps-cp312.tar.xz .
ls -l .whl/kvikio-test-deps-cp312.tar.xz

#!/usr/bin/env bash
# Session 51 run 1, an H100 ("NVIDIA H100 80GB HBM3", 16 CPUs): this session's commit 3344952
# (read-ahead through the O_DIRECT twin; stragglers kept), `bash bench/build-dev.sh --no-wheel`,
# carried with .whl: the prepared run of session 50, as written:
#   OUT=$OUT timeout 590 bash bench/read-ahead-shapes-ab.sh
# Output: output.txt beside this file (the call's tail), logs in a-logs.tgz and cold.txt.
exec bash bench/read-ahead-shapes-ab.sh

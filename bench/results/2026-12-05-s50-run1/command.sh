#!/usr/bin/env bash
# Session 50 run 1, an H100 (the pause on new machines lifted late in the session): this
# session's build (commit deaac4c plus docs, `bash bench/build-dev.sh --no-wheel`, carried
# with .whl) running `OUT=$OUT timeout 580 bash bench/read-ahead-ab.sh`: read-ahead's GPU
# tests, ABBA three reps off (default) against GDIO_READ_AHEAD_BYTES=67108864, the default
# `gdio bench` under each. Output under out/.
OUT=$OUT timeout 580 bash bench/read-ahead-ab.sh

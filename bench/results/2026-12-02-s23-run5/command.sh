#!/usr/bin/env bash
# Session 23 run 5 (the machine still warm from run 4, same build): with the in-place scatter
# kernel, gathering 256 KiB pieces into 4 MiB groups, scatter on and off, async API.
O=$OUT; for rep in 1 2; do for shape in "256 32 3 async" "64 64 3 async" "1024 32 3 async"; do for v in "GDIO_GATHER_SCATTER=true" "GDIO_GATHER_SCATTER=true GDIO_GATHER_PIECE_SIZE=262144 GDIO_GATHER_MAX_BYTES=4194304" "GDIO_GATHER_SCATTER=false GDIO_GATHER_PIECE_SIZE=262144 GDIO_GATHER_MAX_BYTES=4194304"; do r=$(env $v timeout 60 .dev/bin/engine_microbench gpu $shape 2>>$O/micro-stderr.txt | tail -1); echo "rep $rep [$v] [$shape]: $r"; done; done; done

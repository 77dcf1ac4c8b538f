# Shared by the bench/gpu-phase-*.sh scripts that load the checkpoint (source it).
# gdio_wheel_on_path: installs gdio's wheel (.dev/wheel) into /tmp/gdsite and puts it first on
# PYTHONPATH. ensure_checkpoint GIB OUTDIR: writes bench/safetensors-h200.py's checkpoint of GIB
# GiB into /tmp/gdio-st and /dev/shm/gdio-st unless it is there.
gdio_wheel_on_path() {
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl 2>/dev/null
  export PYTHONPATH=/tmp/gdsite${PYTHONPATH:+:$PYTHONPATH}
}
ensure_checkpoint() {
  [ -f /tmp/gdio-st/model.safetensors.index.json ] ||
    python3 bench/safetensors-h200.py --gdio "${GDIO:-$PWD/.dev/bin/gdio}" --out "$2/st" --size-gib "$1" \
      --rows none --peers "" >/dev/null 2>&1
}

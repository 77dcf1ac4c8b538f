#!/usr/bin/env bash
# Every test: Rust (cargo test --workspace: the library, the CLI, the C ABI) and Python (the
# package built with pip into a virtualenv, then pytest). GPU tests skip without a GPU and
# fail instead when GDIO_REQUIRE_GPU=1.
#   ./test.sh           all
#   ./test.sh rust      Rust only
#   ./test.sh python    Python only
#   ./test.sh memcheck  the engine's, batch, stream-ordered, safetensors and cuFile ABI tests
#                       (host memory and the simulated GPU) under valgrind's memcheck: I/O
#                       dropped, canceled or refused in flight must never touch freed or
#                       undefined memory (skipped, saying so, where valgrind is not installed)
#   ./test.sh tsan      the Rust tests of gdio, gdio-cufile, gdio-gdrapi and gdio-cli built with
#                       ThreadSanitizer: any data race fails the run
#   ./test.sh asan      the same with AddressSanitizer and LeakSanitizer (leaks the tests make
#                       on purpose: crates/gdio/tests/lsan-suppressions.txt); not part of `all`
#                       Both need the nightly toolchain (-Zsanitizer, -Zbuild-std) and add its
#                       rust-src component; without a nightly they print SKIPPED.
#   ./test.sh miri      the library's unit tests listed in crates/gdio/tests/miri-tests.txt,
#                       and those of libcufile and libgdrapi, under Miri (nightly's miri
#                       component, added if missing; about 5 minutes); not part of `all`
#   ./test.sh aarch64   the Rust tests (all but the Python crate's unit tests, which link
#                       libpython) built for aarch64 (Grace Hopper's CPU) and run under
#                       qemu-user, the CLI and C programs they start too (binfmt_misc); adds
#                       rustup's aarch64 std and Debian's cross gcc and qemu-user; needs root
#                       (else SKIPPED, saying why); about 4.5 minutes on 2 cores
# Needs: Rust, Python ≥ 3.11 with venv, a C compiler; valgrind for memcheck. The venv lives in
# target/py-venv (GDIO_VENV to change); pip fetches maturin, pytest, numpy, safetensors and
# jax from PyPI the first time. The multi-rank tests (torch.distributed's gloo, host memory) run in a second
# venv, target/py-venv-torch (GDIO_TORCH_VENV to change), made with Debian's torch linked in
# where it is installed (apt-get install --no-install-recommends python3-torch), or any venv of
# yours with a torch that has gloo; they are skipped, saying so, where neither is.
set -euo pipefail
cd "$(dirname "$0")"
what="${1:-all}"

if [ "$what" = all ] || [ "$what" = rust ]; then
  # The scatter kernel (crates/gdio/src/gpu/scatter.ptx) is assembled by NVIDIA's ptxas in the
  # library's tests: fetched once from PyPI's nvidia-cuda-nvcc-cu12 wheel (40 MB) into
  # target/ptxas unless GDIO_PTXAS names one; where it cannot be fetched that test says it skipped.
  if [ -z "${GDIO_PTXAS:-}" ]; then
    ptxas=target/ptxas/nvidia/cuda_nvcc/bin/ptxas
    [ -x "$ptxas" ] || python3 - "$ptxas" <<'PY' || echo "ptxas: not fetched; the kernel's assembly test will skip" >&2
import os, subprocess, sys, tempfile, zipfile
dest = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", d,
                    "nvidia-cuda-nvcc-cu12==12.9.86"], check=True, timeout=300)
    (wheel,) = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".whl")]
    with zipfile.ZipFile(wheel) as z:
        data = z.read("nvidia/cuda_nvcc/bin/ptxas")
os.makedirs(os.path.dirname(dest), exist_ok=True)
with open(dest + ".part", "wb") as f:
    f.write(data)
os.chmod(dest + ".part", 0o755)
os.replace(dest + ".part", dest)
PY
    if [ -x "$ptxas" ]; then export GDIO_PTXAS="$PWD/$ptxas"; fi
  fi
  cargo test --workspace --locked
  # `./test.sh miri` (not part of `all`) runs the tests crates/gdio/tests/miri-tests.txt names:
  # each must still exist, or a rename goes unnoticed until someone runs it.
  known=$(cargo test -q -p gdio --lib --locked -- --list | sed -n 's/: test$//p')
  for n in $(grep -v '^#' crates/gdio/tests/miri-tests.txt); do
    grep -qxF "$n" <<<"$known" ||
      { echo "crates/gdio/tests/miri-tests.txt names $n, which is no test of the library" >&2; exit 1; }
  done
fi

if [ "$what" = all ] || [ "$what" = python ]; then
  venv="${GDIO_VENV:-target/py-venv}"
  py="${PYTHON:-python3}"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q pytest numpy safetensors jax
  # The same route as `pip install ./python` (pip builds the wheel, then installs it), with a
  # debug build (quicker than release); built once, installed here and in the torch venv.
  wheels=target/py-wheel
  rm -rf "$wheels"
  "$venv/bin/python" -m pip wheel -q --no-deps -w "$wheels" ./python \
    --config-settings=build-args="--profile=dev"
  wheel=$(echo "$wheels"/gdio-*.whl)
  "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
  # Run from the tests directory so the source tree's python/gdio does not shadow the
  # installed package. Temporary directories are kept only for failed tests: KvikIO's suite
  # alone leaves 2 GB behind, and pytest keeps three runs' worth.
  rc=0
  (cd python/tests && "../../$venv/bin/python" -m pytest -q -p no:cacheprovider \
    -o tmp_path_retention_policy=failed .) || rc=$?
  case $rc in
    0) ;;
    5) echo "pytest collected no tests: the Python tests are missing" >&2; exit 1 ;;
    *) echo "pytest failed (exit status $rc)" >&2; exit 1 ;;
  esac

  # The multi-rank loads (test_safetensors_dist.py: two processes, torch.distributed's gloo on
  # the host), in a venv of their own: PyPI's torch is a download of gigabytes, Debian's (1.13,
  # python3-torch) is linked in instead. torch 1.13 needs numpy < 2.
  tvenv="${GDIO_TORCH_VENV:-target/py-venv-torch}"
  deb_torch=/usr/lib/python3/dist-packages/torch
  if [ ! -x "$tvenv/bin/python" ] && [ -d "$deb_torch" ]; then
    "$py" -m venv "$tvenv"
    site=$("$tvenv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    ln -s "$deb_torch" "$site/torch"
  fi
  if [ ! -x "$tvenv/bin/python" ]; then
    echo "gloo tests: SKIPPED: no torch: no venv $tvenv, and no Debian torch ($deb_torch) to" \
      "make it with (apt-get install --no-install-recommends python3-torch)" >&2
  else
    tpy="$(cd "$tvenv" && pwd)/bin/python"
    "$tpy" -m pip install -q --upgrade pip >/dev/null
    "$tpy" -m pip install -q pytest safetensors typing_extensions "numpy<2"
    "$tpy" -m pip install -q --force-reinstall --no-deps "$wheel"
    "$tpy" -c 'import torch.distributed as d; assert d.is_gloo_available()' ||
      { echo "gloo tests: $tvenv has no torch with gloo (above)" >&2; exit 1; }
    # GDIO_REQUIRE_TORCH=1: a test that would skip for want of torch fails instead; no other
    # skip is expected here either. With them, the torch round trips, save_model/load_model
    # on the host, and the safetensors package's own tests with gdio.safetensors in its place.
    log=$(mktemp)
    rc=0
    (cd python/tests && GDIO_REQUIRE_TORCH=1 "$tpy" -m pytest -q -rs \
      -p no:cacheprovider -o tmp_path_retention_policy=failed \
      test_safetensors_dist.py test_safetensors.py::test_torch_round_trip_host \
      test_safetensors.py::test_torch_cpu_tensors_of_a_cached_file_are_copy_on_write_views \
      test_safetensors_torch_model.py test_safetensors_suite.py) \
      2>&1 | tee "$log" || rc=$?
    if [ "$rc" != 0 ] || grep -q "[0-9] skipped" "$log"; then
      rm -f "$log"; echo "gloo tests failed or skipped (above)" >&2; exit 1
    fi
    rm -f "$log"
  fi
fi

if [ "$what" = all ] || [ "$what" = memcheck ]; then
  if ! command -v valgrind >/dev/null 2>&1; then
    echo "memcheck: SKIPPED: valgrind is not installed (apt-get install valgrind)"
  else
    # Test binaries by name (debug build, as cargo test built them above), each run whole under
    # memcheck; of the library's unit tests those of the engine, the GPU runtimes, files,
    # safetensors, stream-ordered I/O and batches.
    lib_tests=(engine_async stream_ordered engine_gather engine_split engine_inline engine_host bad_input
      engine_copy_streams engine_read_ahead
      write_partial policy_retry safetensors)
    cufile_tests=(api sim_gpu concurrent faults call_sequences races read_ahead)
    list=$(
      { cargo test --locked -q -p gdio --no-run --message-format=json --lib \
          "${lib_tests[@]/#/--test=}"
        cargo test --locked -q -p gdio-cufile --no-run --message-format=json \
          "${cufile_tests[@]/#/--test=}"; } 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        t = m["target"]
        print(("lib" if t["kind"] == ["lib"] else t["name"]) + " " + m["executable"])
')
    for name in lib "${lib_tests[@]}" "${cufile_tests[@]}"; do
      grep -q "^$name " <<<"$list" || { echo "memcheck: test binary $name was not built" >&2; exit 1; }
    done
    log=$(mktemp)
    while read -r name bin; do
      filter=(); [ "$name" = lib ] && filter=(engine:: gpu:: safetensors:: file:: stream_io batch)
      t0=$SECONDS
      if valgrind -q --error-exitcode=99 "$bin" --test-threads 2 "${filter[@]}" >"$log" 2>&1; then
        echo "memcheck $name: clean ($(grep -o '[0-9]* passed' "$log" | head -1), $((SECONDS - t0)) s)"
      else
        # (valgrind 3.19 does not know the cachestat syscall; gdio falls back to mincore.)
        grep -v 'syscall: 451\|own handler\|README_MISSING\|consider this a bug\|bug_reports' "$log" >&2
        echo "memcheck $name: FAILED (above)" >&2
        rm -f "$log"; exit 1
      fi
    done <<<"$list"
    rm -f "$log"
  fi
fi

# The nightly toolchain with the components named after $1 (which names the part in the
# SKIPPED line), added when missing; fails, having said SKIPPED, where they cannot be had.
nightly_with() {
  local name=$1 have c missing=()
  shift
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "$name: SKIPPED: no nightly toolchain (rustup toolchain install nightly)"
    return 1
  fi
  have=$(rustup +nightly component list --installed 2>/dev/null)
  for c in "$@"; do grep -q "^$c" <<<"$have" || missing+=("$c"); done
  [ ${#missing[@]} = 0 ] || rustup component add --toolchain nightly "${missing[@]}" >/dev/null 2>&1 ||
    { echo "$name: SKIPPED: nightly's ${missing[*]} cannot be added"; return 1; }
}

# Rust tests under a sanitizer ($1: thread or address), std rebuilt with it (-Zbuild-std), in a
# target dir of their own. The tests that build libcufile.so.0 or libgdrapi.so.2 with a cargo
# of their own (the C programs, `gdio check`'s choice of libcufile) cannot pass -Zbuild-std to
# it: they are skipped here and run in the plain build above, as is the test that bounds
# `gdio save`'s peak resident memory (the sanitizer's shadow memory counts in it).
sanitized() {
  local san=$1 name=$2
  nightly_with "$name" rust-src || return 0
  local host t0=$SECONDS
  host=$(rustc -vV | sed -n 's/^host: //p')
  # ThreadSanitizer's exit code on a report fails the test binary; halt_on_error stops at the
  # first report so its stacks are the last thing printed. rustix makes its system calls itself
  # unless built with rustix_use_libc: through libc the sanitizer sees every mmap and munmap
  # (without it a page unmapped by one test and mapped again by another kept the first test's
  # history, and ThreadSanitizer reported the second test's reads into it as a race).
  RUSTFLAGS="-Zsanitizer=$san --cfg=rustix_use_libc" \
    RUSTDOCFLAGS="-Zsanitizer=$san --cfg=rustix_use_libc" \
    CARGO_TARGET_DIR="target/$name" TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
    ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}" \
    LSAN_OPTIONS="suppressions=$PWD/crates/gdio/tests/lsan-suppressions.txt ${LSAN_OPTIONS:-}" \
    cargo +nightly test -q -Zbuild-std --target "$host" --locked \
      -p gdio -p gdio-cufile -p gdio-gdrapi -p gdio-cli --tests -- \
      --skip c_program --skip soname_and_symbols --skip summary_at_info \
      --skip loading_starts_no_thread --skip check_names_the_libcufile \
      --skip holds_the_checkpoint_once_in_host_memory ||
    { echo "$name: FAILED (above)" >&2; exit 1; }
  echo "$name: clean ($((SECONDS - t0)) s)"
}

if [ "$what" = all ] || [ "$what" = tsan ]; then
  sanitized thread tsan
fi
if [ "$what" = asan ]; then
  sanitized address asan
fi

# The library's unit tests that Miri can interpret (the list says why the others cannot), with
# the copy routines' SSE4.1 and AVX2 paths compiled in so that Miri runs them too.
if [ "$what" = miri ]; then
  nightly_with miri miri rust-src || exit 0
  export CARGO_TARGET_DIR=target/miri MIRIFLAGS="-Zmiri-disable-isolation ${MIRIFLAGS:-}"
  # (`--target` keeps these flags off build scripts, which run natively on this CPU.)
  export RUSTFLAGS="-Ctarget-feature=+sse4.1,+avx2"
  host=$(rustc -vV | sed -n 's/^host: //p')
  mapfile -t names < <(grep -v '^#' crates/gdio/tests/miri-tests.txt | grep .)
  known=$(cargo +nightly miri test -q --target "$host" -p gdio --lib --locked -- --list 2>/dev/null | sed -n 's/: test$//p')
  for n in "${names[@]}"; do
    grep -qxF "$n" <<<"$known" || { echo "miri: no test $n (crates/gdio/tests/miri-tests.txt)" >&2; exit 1; }
  done
  t0=$SECONDS
  cargo +nightly miri test -q --target "$host" -p gdio --lib --locked -- --exact "${names[@]}" ||
    { echo "miri: FAILED (above)" >&2; exit 1; }
  # The two C ABIs' own unit tests (NULL and garbage handles, parameters, batches' timeouts,
  # stream registration) and cufile.h's struct layouts: all of them run under Miri.
  cargo +nightly miri test -q --target "$host" -p gdio-cufile -p gdio-gdrapi --lib --locked ||
    { echo "miri: FAILED (above)" >&2; exit 1; }
  cargo +nightly miri test -q --target "$host" -p gdio-cufile --test layout --locked ||
    { echo "miri: FAILED (above)" >&2; exit 1; }
  echo "miri: clean, ${#names[@]} tests of gdio and the C ABIs' unit and layout tests ($((SECONDS - t0)) s)"
fi

# The Rust tests built for aarch64 and run under qemu-user. Where the machine cannot set that
# up (no root for binfmt_misc or apt, no network for rustup's std) it prints SKIPPED and why.
aarch64_setup() {
  local t=$1 bf=/proc/sys/fs/binfmt_misc need=()
  rustup target list --installed | grep -qx "$t" || rustup target add "$t" >/dev/null 2>&1 ||
    { echo "rustup cannot add $t"; return 1; }
  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
  command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
  if [ ${#need[@]} -gt 0 ]; then
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}") \
      >/dev/null 2>&1 || { echo "cannot install ${need[*]}"; return 1; }
  fi
  # The tests start the gdio executable and C programs they build: the kernel hands aarch64
  # ELF files to qemu (binfmt_misc), which finds aarch64's loader and libc under the prefix.
  [ -e "$bf/register" ] || mount -t binfmt_misc binfmt_misc "$bf" 2>/dev/null ||
    { echo "cannot mount binfmt_misc (needs root)"; return 1; }
  if [ ! -e "$bf/qemu-aarch64" ]; then
    local magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    local mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    echo ":qemu-aarch64:M::$magic:$mask:$(command -v qemu-aarch64):" 2>/dev/null >"$bf/register" ||
      { echo "cannot register qemu-aarch64 with binfmt_misc (needs root)"; return 1; }
  fi
}

if [ "$what" = all ] || [ "$what" = aarch64 ]; then
  t=aarch64-unknown-linux-gnu
  if why=$(aarch64_setup "$t"); then
    t0=$SECONDS
    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu CC=aarch64-linux-gnu-gcc \
      CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
      cargo test -q --workspace --exclude gdio-py --locked --target "$t" ||
      { echo "aarch64: FAILED (above)" >&2; exit 1; }
    echo "aarch64: clean, the Rust tests under qemu-user ($((SECONDS - t0)) s)"
  else
    echo "aarch64: SKIPPED ($why)"
  fi
fi

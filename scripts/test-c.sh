#!/usr/bin/env bash
# Builds the C ABI in release and runs the C tests of ffi/capi/tests/c against the checked-in
# include/dpdist.h, each linked twice (shared libdpdist.so and static libdpdist.a), and the shared
# build again under valgrind (required; DPD_VALGRIND=0 is the explicit way to leave it out).
# Exits non-zero if anything fails to compile or any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
lib="$target/release"
out="$target/c-tests"
mkdir -p "$out"

cargo build -p dpdist-capi --release
# The shared library's SONAME is libdpdist.so.N (ffi/capi/build.rs): the programs linked here ask
# for that name, which cargo does not create.
abi="$(sed -n 's/^#define DPD_ABI_VERSION \([0-9]*\)$/\1/p' include/dpdist.h)"
ln -sf libdpdist.so "$lib/libdpdist.so.$abi"

# The valgrind run is part of the check: fail rather than skip it silently (DPD_VALGRIND=0 is the
# explicit way to leave it out on a developer machine).
if [ "${DPD_VALGRIND:-1}" != 0 ] && ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind is not installed (apt-get install -y valgrind), or set DPD_VALGRIND=0" >&2
  exit 1
fi

cc="${CC:-cc}"
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -O1 -g -Iinclude)
static_libs=(-lpthread -ldl -lm) # what a Rust staticlib needs on Linux besides libc
failed=()

run() { # name, command...
  local name="$1"; shift
  printf '\n--- %s\n' "$name"
  if ! "$@"; then failed+=("$name"); fi
}

for src in ffi/capi/tests/c/test_*.c; do
  name="$(basename "$src" .c)"
  "$cc" "${cflags[@]}" "$src" -o "$out/$name" -L"$lib" -ldpdist -Wl,-rpath,"$lib" -lm
  "$cc" "${cflags[@]}" "$src" -o "$out/${name}_static" "$lib/libdpdist.a" "${static_libs[@]}"
  run "$name (shared)" "$out/$name"
  run "$name (static)" "$out/${name}_static"
  if [ "${DPD_VALGRIND:-1}" != 0 ]; then
    run "$name (valgrind)" valgrind -q --error-exitcode=1 --leak-check=full \
      --errors-for-leak-kinds=definite --show-leak-kinds=definite "$out/$name"
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  printf '\nC tests FAILED: %s\n' "${failed[*]}" >&2
  exit 1
fi
printf '\nall C tests passed\n'

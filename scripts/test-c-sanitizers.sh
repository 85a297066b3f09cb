#!/usr/bin/env bash
# Builds the C ABI in release and runs the C tests of ffi/capi/tests/c under AddressSanitizer +
# UndefinedBehaviorSanitizer (gcc -fsanitize=address,undefined), each test linked against the
# static libdpdist.a and against the shared libdpdist.so. The Rust library itself is not
# instrumented, but ASan interposes malloc/free for the whole process, so heap misuse across the
# ABI (a host freeing a dpdist handle twice, dpdist writing past a caller's array, a leaked
# handle) is caught on both sides. Leak detection is on.
#
# Fails (never skips) when the compiler cannot build or run a sanitized binary: a CI step that
# silently does nothing would be worse than none.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
lib="$target/release"
out="$target/c-tests-sanitizers"
mkdir -p "$out"

cc="${CC:-gcc}"
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -O1 -g -Iinclude "${san[@]}")
static_libs=(-lpthread -ldl -lm) # what a Rust staticlib needs on Linux besides libc

# detect_leaks: leaked dpdist handles fail the test. abort_on_error/halt_on_error: the first
# report ends the run with a non-zero status. UBSan prints a stack and exits non-zero.
# allocator_may_return_null: a refused allocation returns NULL, as glibc's malloc does, instead of
# ASan ending the process; test_limits.c checks that dpdist turns it into DPD_ERR_ALLOC.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# Probe: can this machine build and run a sanitized program, and does ASan really report? A
# deliberate heap overflow must be caught; if it is not, the sanitizer run would prove nothing.
probe="$out/probe"
printf '#include <stdlib.h>\nint main(int c, char **v) { (void)v; char *p = malloc(4); p[c + 3] = 1; free(p); return 0; }\n' >"$probe.c"
if ! "$cc" "${san[@]}" -g "$probe.c" -o "$probe"; then
  echo "sanitizer tests: $cc cannot build with -fsanitize=address,undefined (install libasan/libubsan)" >&2
  exit 1
fi
if ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" "$probe" 2>/dev/null; then
  echo "sanitizer tests: ASan did not report a deliberate heap overflow; refusing to trust it" >&2
  exit 1
fi
printf '#include <stdlib.h>\nvoid *kept;\nint main(void) { kept = malloc(7); kept = 0; return 0; }\n' >"$probe-leak.c"
"$cc" "${san[@]}" -g "$probe-leak.c" -o "$probe-leak"
if ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" "$probe-leak" 2>/dev/null; then
  echo "sanitizer tests: LeakSanitizer did not report a deliberate leak (ptrace restricted?); refusing to trust it" >&2
  exit 1
fi

cargo build -p dpdist-capi --release
# The shared library's SONAME is libdpdist.so.N (ffi/capi/build.rs); cargo does not make that link.
abi="$(sed -n 's/^#define DPD_ABI_VERSION \([0-9]*\)$/\1/p' include/dpdist.h)"
ln -sf libdpdist.so "$lib/libdpdist.so.$abi"

failed=()
run() { # name, command...
  local name="$1"; shift
  printf '\n--- %s\n' "$name"
  if ! "$@"; then failed+=("$name"); fi
}

for src in ffi/capi/tests/c/test_*.c; do
  name="$(basename "$src" .c)"
  "$cc" "${cflags[@]}" "$src" -o "$out/${name}_static" "$lib/libdpdist.a" "${static_libs[@]}"
  "$cc" "${cflags[@]}" "$src" -o "$out/$name" -L"$lib" -ldpdist -Wl,-rpath,"$lib" -lm
  run "$name (asan+ubsan, static)" "$out/${name}_static"
  run "$name (asan+ubsan, shared)" "$out/$name"
done

if [ "${#failed[@]}" -gt 0 ]; then
  printf '\nC sanitizer tests FAILED: %s\n' "${failed[*]}" >&2
  exit 1
fi
printf '\nall C tests passed under AddressSanitizer + UndefinedBehaviorSanitizer\n'

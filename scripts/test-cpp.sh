#!/usr/bin/env bash
# Builds the C ABI in release and runs the C++ wrapper test (ffi/cpp/tests) compiled with
# g++ -std=c++17 -Wall -Wextra -Werror, once with flags from the dpdist.pc template (configured
# for this build tree, read through pkg-config) and, when cmake is installed, once through
# ffi/cpp/CMakeLists.txt. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
lib="$target/release"
out="$target/cpp-tests"
mkdir -p "$out"

cargo build -p dpdist-capi --release

cxx="${CXX:-g++}"
cxxflags=(-std=c++17 -Wall -Wextra -Werror -pedantic -O1 -g)

# pkg-config: the template configured for this build tree.
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
sed -e "s|@DPDIST_PREFIX@|$PWD|" -e "s|@DPDIST_LIBDIR@|$lib|" \
    -e "s|@DPDIST_INCLUDEDIR@|$PWD/include|" -e "s|@DPDIST_VERSION@|$version|" \
    ffi/cpp/dpdist.pc.in > "$out/dpdist.pc"
if command -v pkg-config >/dev/null 2>&1; then
  read -r -a flags <<< "$(PKG_CONFIG_PATH="$out" pkg-config --cflags --libs dpdist)"
else
  flags=(-I"$PWD/include" -L"$lib" -ldpdist)
fi
"$cxx" "${cxxflags[@]}" ffi/cpp/tests/test_dpdist.cpp -o "$out/test_dpdist" "${flags[@]}" \
  -Wl,-rpath,"$lib"
printf '\n--- test_dpdist (g++, pkg-config flags: %s)\n' "${flags[*]}"
"$out/test_dpdist"

if command -v cmake >/dev/null 2>&1; then
  printf '\n--- test_dpdist (CMake)\n'
  cmake -S ffi/cpp -B "$out/cmake" -DDPDIST_LIB_DIR="$lib" >/dev/null
  cmake --build "$out/cmake" >/dev/null
  (cd "$out/cmake" && ctest --output-on-failure)
else
  printf '\n(cmake not installed: skipped the CMake build of ffi/cpp)\n'
fi
printf '\nall C++ tests passed\n'

#!/usr/bin/env bash
# The C/C++ packaging checks, all required (a missing cmake, pkg-config or readelf is a failure,
# not a skip); exits non-zero on any failure:
#  1. ffi/cpp as the top-level CMake project: builds and runs the C++ wrapper test (ctest).
#  2. `cmake --install` into a prefix, which is then MOVED elsewhere (the package must be
#     relocatable); the installed libdpdist.so.N carries its SONAME and no debug info.
#  3. A separate consumer project (ffi/cpp/consumer) does find_package(dpdist REQUIRED) from the
#     moved prefix and builds the README's C example (shared and static) and C++ example, which are
#     extracted from README.md here so that they cannot drift; all three run.
#  4. pkg-config from the moved prefix: the C++ wrapper test (g++ -Werror) shared, the README's C
#     example static (no libdpdist.so among its NEEDED).
#  5. The README's shell block of "Calling dpdist from C", run as written (HOME in a scratch dir).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

need() { # tool: a check this script runs must not be skipped silently
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "$1 is not installed: it is needed for the C/C++ package checks (apt-get install -y $2)" >&2
  exit 1
}
need cmake cmake
need pkg-config pkg-config
need readelf binutils

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
out="$target/cpp-tests"
rm -rf "$out"
mkdir -p "$out"

cargo build -p dpdist-capi --release
abi="$(sed -n 's/^#define DPD_ABI_VERSION \([0-9]*\)$/\1/p' include/dpdist.h)"
soname="libdpdist.so.$abi"

# README code blocks: the first ```LANG block under the heading, as written.
extract() { # heading, lang, destination
  awk -v h="$1" -v fence='```'"$2" '
    $0 == h { inside = 1; next }
    inside && /^## / { exit }
    inside && !grab && $0 == fence { grab = 1; next }
    grab && $0 == "```" { exit }
    grab { print }' README.md > "$3"
  if [ ! -s "$3" ]; then
    echo "README.md has no \`\`\`$2 block under '$1'" >&2
    exit 1
  fi
}
snippets="$out/snippets"
mkdir -p "$snippets"
extract "## Calling dpdist from C" c "$snippets/readme_c.c"
extract "## C++" cpp "$snippets/readme_cpp.cpp"
extract "## Calling dpdist from C" sh "$snippets/readme_build.sh"

printf '\n--- 1. C++ wrapper test (ffi/cpp top level, ctest)\n'
cmake -S ffi/cpp -B "$out/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/build" >/dev/null
(cd "$out/build" && ctest --output-on-failure)

printf '\n--- 2. install, then move the prefix\n'
cmake --install "$out/build" --prefix "$out/installed"
mv "$out/installed" "$out/moved"
prefix="$out/moved"
libdir="$prefix/lib"
readelf -d "$libdir/$soname" | grep -q "Library soname: \[$soname\]" \
  || { echo "$libdir/$soname has no SONAME $soname" >&2; exit 1; }
if readelf -S "$libdir/$soname" | grep -q '\.debug_'; then
  echo "$libdir/$soname still has debug sections" >&2; exit 1
fi
[ "$(readlink "$libdir/libdpdist.so")" = "$soname" ] || { echo "libdpdist.so link missing" >&2; exit 1; }
ls -l "$libdir"

nothing_built_from() { # binary: it must not need libdpdist.so at run time
  if readelf -d "$1" | grep -q 'NEEDED.*libdpdist'; then
    echo "$1 needs libdpdist.so: it was meant to be linked statically" >&2; exit 1
  fi
}

printf '\n--- 3. consumer project: find_package(dpdist REQUIRED) from the moved prefix\n'
cmake -S ffi/cpp/consumer -B "$out/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DSNIPPET_DIR="$snippets" >/dev/null
cmake --build "$out/consumer" >/dev/null
readelf -d "$out/consumer/readme_c" | grep -q "NEEDED.*\[$soname\]" \
  || { echo "readme_c does not ask for $soname" >&2; exit 1; }
nothing_built_from "$out/consumer/readme_c_static"
for exe in readme_c readme_c_static readme_cpp; do
  printf '%s: ' "$exe"
  "$out/consumer/$exe"
done

printf '\n--- 4. pkg-config from the moved prefix\n'
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(realpath "$(pkg-config --variable=prefix dpdist)")" = "$(realpath "$prefix")" ] \
  || { echo "dpdist.pc prefix does not follow the moved .pc file" >&2; exit 1; }
read -r -a flags <<< "$(pkg-config --cflags --libs dpdist)"
g++ -std=c++17 -Wall -Wextra -Werror -pedantic -O1 ffi/cpp/tests/test_dpdist.cpp \
  -o "$out/test_dpdist_pc" "${flags[@]}" -Wl,-rpath,"$libdir"
"$out/test_dpdist_pc"
read -r -a cflags <<< "$(pkg-config --cflags dpdist)"
read -r -a static_libs <<< "$(pkg-config --static --libs dpdist | sed 's/-ldpdist/-l:libdpdist.a/')"
cc -std=c11 -Wall -Wextra -Werror -pedantic "$snippets/readme_c.c" -o "$out/readme_c_pc_static" \
  "${cflags[@]}" "${static_libs[@]}"
nothing_built_from "$out/readme_c_pc_static"
printf 'readme_c (pkg-config --static): '
"$out/readme_c_pc_static"

printf '\n--- 5. the README build commands, as written\n'
scratch="$out/readme-run"
mkdir -p "$scratch/home"
# The block runs from a checkout's root: give the scratch directory the pieces it uses, and
# let its `cargo build` run in the checkout itself (a no-op there: the library is built).
for piece in Cargo.toml include ffi; do ln -s "$repo/$piece" "$scratch/$piece"; done
ln -s "$target" "$scratch/target"
cp "$snippets/readme_c.c" "$scratch/example.c"
export repo
# HOME changes below; cargo and rustup keep their own homes.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
cargo() { (cd "$repo" && command cargo "$@"); }
export -f cargo
(cd "$scratch" && HOME="$scratch/home" bash -euxo pipefail "$snippets/readme_build.sh") < /dev/null
nothing_built_from "$scratch/example_static"
printf 'example_static: '
"$scratch/example_static"
printf '\nall C++ / packaging checks passed\n'

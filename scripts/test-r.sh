#!/usr/bin/env bash
# Builds the dpdist C library in release, installs the R package (ffi/r) into a temporary
# library, linking libdpdist.a statically, and runs every ffi/r/tests/test-*.R with Rscript.
# Exits non-zero if the build, the install or any test fails. Needs R (r-base-core) and a C
# compiler; nothing from CRAN.
#   DPDIST_LIB_DIR      use a prebuilt libdpdist.a from this directory (skips the cargo build)
#   DPDIST_INCLUDE_DIR  use dpdist.h from this directory (default: include/)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

step() { printf '\n==> %s\n' "$*"; }

step "R registration: init.c generated from src/*.c, every .Call matches a routine's arity"
python3 scripts/check-r-registration.py
python3 scripts/check-r-registration.py --self-test

if [ -z "${DPDIST_LIB_DIR:-}" ]; then
  step "cargo build --release -p dpdist-capi"
  cargo build --release -p dpdist-capi
  target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  export DPDIST_LIB_DIR="$target_dir/release"
fi
export DPDIST_INCLUDE_DIR="${DPDIST_INCLUDE_DIR:-$root/include}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib"
# Install from a copy so the build leaves no objects or generated Makevars in the tree.
cp -R ffi/r "$work/dpdist"
rm -f "$work/dpdist/src/Makevars" "$work/dpdist/src/"*.o "$work/dpdist/src/"*.so

step "R CMD INSTALL ffi/r (static libdpdist.a from $DPDIST_LIB_DIR)"
R CMD INSTALL --no-multiarch --library="$work/lib" "$work/dpdist"

step "R tests (ffi/r/tests)"
failed=0
cd "$root/ffi/r/tests"
for test in test-*.R; do
  echo "--- $test"
  if ! R_LIBS="$work/lib" Rscript --vanilla "$test"; then
    echo "*** $test FAILED"
    failed=$((failed + 1))
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "$failed R test file(s) failed"
  exit 1
fi
echo "all R tests passed"

#!/usr/bin/env bash
# Runs every test of dpdist: the Rust workspace, the C and C++ host tests over the C ABI, and the
# R package's tests when R is installed, and the book (docs/: built, links checked, every program in
# it run). This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "Rust workspace tests (release: the statistical tests draw many samples)"
cargo test --workspace --release

step "The parties that only send build without the server stack (no axum, no SQLite, no PostgreSQL)"
# Dev profile, not --release: .ci/run's `cargo clippy --workspace --all-targets` has checked every
# dependency with these features already (docs/src/results/build.md), so only dca-service is checked.
cargo clippy -p dca-service --no-default-features --lib -- -D warnings
for client in "dca-service --no-default-features" dpdist-capi-net; do
  # shellcheck disable=SC2086 # the package and its flags are two words
  if cargo tree -p $client -e normal | grep -E "axum|rusqlite|libsqlite3|postgres"; then
    echo "the client build ($client) pulls in the server stack" >&2
    exit 1
  fi
done

step "Every cargo selection below resolves shared dependencies alike (each -p build reuses the last)"
python3 scripts/check-build-features.py

step "C host tests over the C ABI"
scripts/test-c.sh

step "C host tests under AddressSanitizer + UndefinedBehaviorSanitizer"
scripts/test-c-sanitizers.sh

step "C++ host tests over the RAII wrapper"
scripts/test-cpp.sh

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac

step "libdpdist_net (the network participant): C argument checks, the C++ participant builds"
scripts/test-net-hosts.sh build
# The R package's participate() tests load the library and read a CA.
export DPDIST_NET_LIB="$target/release/libdpdist_net.so"
export DPDIST_TEST_CA="$target/net-tests/certs/ca.pem"

if command -v R >/dev/null 2>&1; then
  step "R package tests"
  # Keep the checked package installed: the book's R blocks run against it.
  rm -rf "$target/r-check"
  DPDIST_R_CHECK_DIR="$target/r-check" scripts/test-r.sh
  export DPDIST_R_LIB="$target/r-check/dpdist.Rcheck"
elif [ -n "${CI:-}" ]; then
  echo "R is not installed: CI must run the R package tests (.ci/run installs r-base-core)" >&2
  exit 1
else
  step "R not installed: skipping the R package tests (apt-get install -y r-base-core)"
fi

if [ -n "${DPDIST_R_LIB:-}" ]; then
  step "A job over dpdist, C++ (libdpdist_net) and R (participate()) participants, bit for bit"
  scripts/test-net-hosts.sh job
else
  step "R not installed: skipping the job with a C++ and an R participant"
fi

step "Julia packages: static check of every @ccall against include/dpdist.h and dpdist_net.h (no Julia binary here)"
python3 scripts/check-julia.py
python3 scripts/check-julia.py --header include/dpdist_net.h --src ffi/julia/DpDistNet/src \
  --library libdpdist_net
# The checker itself: every planted mistake in a copy of the sources must be caught.
python3 scripts/check-julia.py --self-test

step "The book: code fences, links, mdbook build, and every program in it"
scripts/test-book.sh

step "all tests passed"

#!/usr/bin/env bash
# Runs every test of dpdist: the Rust workspace, the C and C++ host tests over the C ABI, and the
# R package's tests when R is installed. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "Rust workspace tests (release: the statistical tests draw many samples)"
cargo test --workspace --release

step "C host tests over the C ABI"
scripts/test-c.sh

step "C host tests under AddressSanitizer + UndefinedBehaviorSanitizer"
scripts/test-c-sanitizers.sh

step "C++ host tests over the RAII wrapper"
scripts/test-cpp.sh

if command -v R >/dev/null 2>&1; then
  step "R package tests"
  scripts/test-r.sh
elif [ -n "${CI:-}" ]; then
  echo "R is not installed: CI must run the R package tests (.ci/run installs r-base-core)" >&2
  exit 1
else
  step "R not installed: skipping the R package tests (apt-get install -y r-base-core)"
fi

step "Julia package: static check of every @ccall against include/dpdist.h (no Julia binary here)"
python3 scripts/check-julia.py

step "all tests passed"

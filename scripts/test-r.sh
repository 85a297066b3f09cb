#!/usr/bin/env bash
# The R package (ffi/r) as CRAN would see it:
#  1. the .Call registration: init.c generated from src/*.c, every .Call in R/ matching a
#     routine's arity, every dpd_* name in the shim declared in include/dpdist.h;
#  2. scripts/vendor-r.sh places the Rust crates and their vendored dependencies in ffi/r/src/rust
#     (needs crates.io, or a cargo cache holding every crate of Cargo.lock);
#  3. R CMD build makes the source tarball; R CMD check --no-manual installs it -- configure and
#     src/Makevars build libdpdist.a with cargo, offline, from the tarball's vendored crates --
#     and runs every ffi/r/tests/*.R.
# Fails when any step fails or the check reports an ERROR or a WARNING; NOTEs are shown.
# Needs R (r-base-core), a C compiler, cargo/rustc and python3; nothing from CRAN.
#   DPDIST_R_CHECK_DIR  keep the tarball and dpdist.Rcheck here instead of a temporary directory
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
started=$(date +%s)

step() { printf '\n==> %s (%ds)\n' "$*" "$(($(date +%s) - started))"; }

step "R registration: init.c generated from src/*.c, every .Call matches a routine's arity"
python3 scripts/check-r-registration.py
python3 scripts/check-r-registration.py --self-test

step "scripts/vendor-r.sh: Rust crates and vendored dependencies into ffi/r/src/rust"
scripts/vendor-r.sh

if [ -n "${DPDIST_R_CHECK_DIR:-}" ]; then
  work=$DPDIST_R_CHECK_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
version=$(sed -n 's/^Version: *//p' ffi/r/DESCRIPTION)
tarball="dpdist_${version}.tar.gz"

step "R CMD build ffi/r"
(cd "$work" && rm -f "$tarball" && R CMD build --no-build-vignettes --no-manual "$root/ffi/r")
echo "source tarball: $(du -h "$work/$tarball" | cut -f1)"

step "R CMD check --no-manual $tarball (builds the Rust library offline, runs tests/*.R)"
# CI reaches crates.io but not CRAN: the check's look-up of the current time (future file
# timestamps) would only add a NOTE saying it could not run, and its dependency-cycle check reads
# a repository index, here an empty local one instead of CRAN's (dpdist needs only base R).
status=0
mkdir -p "$work/repo/src/contrib"
: > "$work/repo/src/contrib/PACKAGES"
echo "options(repos = c(CRAN = 'file://$work/repo'))" > "$work/Rprofile.site"
(cd "$work" && _R_CHECK_FUTURE_FILE_TIMESTAMPS_=false R_PROFILE="$work/Rprofile.site" \
  R CMD check --no-manual --no-build-vignettes "$tarball") || status=$?
log="$work/dpdist.Rcheck/00check.log"

show_failures() {
  for f in "$work"/dpdist.Rcheck/tests/*.Rout.fail; do
    [ -e "$f" ] || continue
    echo "--- $f (last 40 lines)"
    tail -n 40 "$f"
  done
  if [ -f "$work/dpdist.Rcheck/00install.out" ]; then
    echo "--- 00install.out (last 40 lines)"
    tail -n 40 "$work/dpdist.Rcheck/00install.out"
  fi
}

if [ ! -f "$log" ]; then
  echo "R CMD check left no log (exit status $status)" >&2
  exit 1
fi
for rout in "$work"/dpdist.Rcheck/tests/test-*.Rout; do
  [ -e "$rout" ] || continue
  printf '%-28s %3d ok, %d failed\n' "$(basename "$rout" .Rout)" \
    "$(grep -c '^ok ' "$rout" || true)" "$(grep -c '^FAIL ' "$rout" || true)"
done
summary=$(grep '^Status:' "$log" || echo "Status: unknown")
echo "R CMD check: $summary ($(($(date +%s) - started)) s since the start of test-r.sh)"
if [ "$status" -ne 0 ] || ! echo "$summary" | grep -q '^Status: \(OK\|[0-9]* NOTEs\?\)$'; then
  grep -B1 -A12 '\.\.\. \(ERROR\|WARNING\)$' "$log" || true
  show_failures
  echo "R CMD check failed: $summary (exit status $status)" >&2
  exit 1
fi
grep -A8 '\.\.\. NOTE$' "$log" || true
echo "R package OK"

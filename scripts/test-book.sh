#!/usr/bin/env bash
# The book (docs/, mdBook) cannot drift: checks every code fence of README.md and docs/src
# (scripts/book-blocks.py), every relative link and #anchor (scripts/check-links.py), builds the
# book with mdbook, runs its Rust blocks as doctests of the umbrella crate, and compiles and runs
# every C and C++ block against the release library, every R block against the installed R
# package and every `sh,run` block. The convention is in docs/src/contributing.md.
#   DPDIST_R_LIB     an R library holding the installed dpdist package (scripts/test-all.sh sets it
#                    from the R check); without it R blocks are skipped, which CI refuses
# Exits non-zero on any failure, naming the page and line of the block.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
lib="$target/release"
out="$target/book-tests"
mkdir -p "$out"

step() { printf '\n--- %s\n' "$*"; }

step "code fences (docs/src/contributing.md), runnable blocks into $out/blocks"
python3 scripts/book-blocks.py extract "$out/blocks"

step "links and anchors"
python3 scripts/check-links.py --self-test
python3 scripts/check-links.py

step "mdbook build docs"
if ! command -v mdbook >/dev/null 2>&1; then
  echo "mdbook is not installed: cargo install mdbook --version 0.5.4 --locked (.ci/run does)" >&2
  exit 1
fi
mdbook build docs -d "$target/book"

step "Rust blocks: doctests of the umbrella crate (src/lib.rs includes every page)"
cargo test --release --doc -p dpdist

step "C, C++, R and sh,run blocks"
cargo build -p dpdist-capi --release
abi="$(sed -n 's/^#define DPD_ABI_VERSION \([0-9]*\)$/\1/p' include/dpdist.h)"
ln -sf libdpdist.so "$lib/libdpdist.so.$abi"

if [ -z "${DPDIST_R_LIB:-}" ] && grep -q '^r	' "$out/blocks/manifest.tsv"; then
  if [ -n "${CI:-}" ]; then
    echo "DPDIST_R_LIB is not set: CI must run the book's R blocks (scripts/test-all.sh sets it)" >&2
    exit 1
  fi
  echo "NOTE: DPDIST_R_LIB not set (no installed R package): the R blocks are NOT run"
fi

failed=()
ran=0
while IFS=$'\t' read -r lang file where; do
  src="$out/blocks/$file"
  exe="$out/blocks/${file%.*}"
  printf '%-6s %s\n' "$lang" "$where"
  ok=1
  case "$lang" in
    c)
      "${CC:-cc}" -std=c11 -Wall -Wextra -Werror -pedantic -O1 -Iinclude "$src" -o "$exe" \
        -L"$lib" -ldpdist -Wl,-rpath,"$lib" -lm && "$exe" || ok=0 ;;
    cpp)
      "${CXX:-c++}" -std=c++17 -Wall -Wextra -Werror -pedantic -O1 -Iinclude "$src" -o "$exe" \
        -L"$lib" -ldpdist -Wl,-rpath,"$lib" && "$exe" || ok=0 ;;
    r)
      [ -n "${DPDIST_R_LIB:-}" ] || continue
      R_LIBS="$DPDIST_R_LIB" Rscript "$src" || ok=0 ;;
    sh,run)
      (cd "$repo" && timeout 600 bash -euo pipefail "$src") < /dev/null || ok=0 ;;
  esac
  ran=$((ran + 1))
  [ "$ok" = 1 ] || failed+=("$where ($lang)")
done < "$out/blocks/manifest.tsv"

if [ "${#failed[@]}" -gt 0 ]; then
  printf '\nbook blocks FAILED: %s\n' "${failed[*]}" >&2
  exit 1
fi
printf '\nbook OK: built, links resolve, %d blocks ran\n' "$ran"

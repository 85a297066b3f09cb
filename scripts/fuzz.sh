#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS each (default 60), starting from the
# committed seed corpus (fuzz/corpus/<target>; new inputs go to a scratch copy, so the committed
# corpus stays small). Needs a nightly toolchain (`cargo +nightly`) and cargo-fuzz
# (`cargo install cargo-fuzz --locked`); fails, never skips, when either is missing. Prints the
# executions of each target; exits non-zero on the first crash, timeout or OOM (the reproducer
# is kept in fuzz/artifacts/<target>/).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
case "$seconds" in '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;; esac

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: no nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz missing (cargo install cargo-fuzz --locked)" >&2
  exit 1
fi

targets=(decode_share decode_node_sum node_absorb aggregator_add round_config node_http open_share)
scratch="${CARGO_TARGET_DIR:-fuzz/target}/fuzz-corpus"
mkdir -p "$scratch"
# node_http's nodes keep SQLite files under the temp directory: keep them in the scratch area.
export TMPDIR="$scratch/tmp"
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"

cargo +nightly fuzz build --debug-assertions # every target of fuzz/ (optimised, with libFuzzer)

for t in "${targets[@]}"; do
  printf '\n--- fuzz %s for %ss\n' "$t" "$seconds"
  rm -rf "${scratch:?}/$t" && cp -r "fuzz/corpus/$t" "$scratch/$t"
  log="$scratch/$t.log"
  if ! cargo +nightly fuzz run --debug-assertions "$t" "$scratch/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=4096 -print_final_stats=1 \
    >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: target $t FAILED (reproducer in fuzz/artifacts/$t/)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^Done' "$log" || tail -n 3 "$log"
done
rm -rf "$TMPDIR"
printf '\nall %d fuzz targets ran %ss each without a finding\n' "${#targets[@]}" "$seconds"

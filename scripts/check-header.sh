#!/usr/bin/env bash
# Fails (exit 1, with a diff) when include/dpdist.h is not what scripts/gen-header.sh generates
# from the current ffi/capi sources.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh="$(mktemp "${TMPDIR:-/tmp}/dpdist.h.XXXXXX")"
trap 'rm -f "$fresh"' EXIT
scripts/gen-header.sh "$fresh"
if ! diff -u include/dpdist.h "$fresh"; then
  echo "include/dpdist.h is out of date: run scripts/gen-header.sh and commit the result" >&2
  exit 1
fi
echo "include/dpdist.h is up to date"

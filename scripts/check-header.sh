#!/usr/bin/env bash
# Fails (exit 1, with a diff) when include/dpdist.h or include/dpdist_net.h is not what
# scripts/gen-header.sh generates from the current ffi/capi and ffi/capi/net sources.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh="$(mktemp -d "${TMPDIR:-/tmp}/dpdist-headers.XXXXXX")"
trap 'rm -rf "$fresh"' EXIT
scripts/gen-header.sh "$fresh"
status=0
for header in dpdist.h dpdist_net.h; do
  if ! diff -u "include/$header" "$fresh/$header"; then
    echo "include/$header is out of date: run scripts/gen-header.sh and commit the result" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "include/dpdist.h and include/dpdist_net.h are up to date"
exit "$status"

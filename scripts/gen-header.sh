#!/usr/bin/env bash
# Regenerates include/dpdist.h from ffi/capi with the pinned cbindgen.
# Usage: scripts/gen-header.sh [output path]   (default include/dpdist.h)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-include/dpdist.h}"
cbindgen="$(scripts/ensure-cbindgen.sh)"
"$cbindgen" --quiet --config ffi/capi/cbindgen.toml --output "$out" ffi/capi

#!/usr/bin/env bash
# Regenerates the C headers with the pinned cbindgen: include/dpdist.h from ffi/capi (the core
# library) and include/dpdist_net.h from ffi/capi/net (the network participant).
# Usage: scripts/gen-header.sh [output dir]   (default include/)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-include}"
cbindgen="$(scripts/ensure-cbindgen.sh)"
"$cbindgen" --quiet --config ffi/capi/cbindgen.toml --output "$out/dpdist.h" ffi/capi
"$cbindgen" --quiet --config ffi/capi/net/cbindgen.toml --output "$out/dpdist_net.h" ffi/capi/net

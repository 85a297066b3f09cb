#!/usr/bin/env bash
# Prints the path of the pinned cbindgen, installing it first if needed.
#
# The header must not depend on which cbindgen a developer happens to have, so exactly
# CBINDGEN_VERSION is used: from PATH if that is the right version, else from $DPD_TOOLS_DIR
# (default: target/tools of the repository), where it is installed with `cargo install --locked`
# on first use (a few minutes; needs crates.io).
set -euo pipefail
CBINDGEN_VERSION=0.29.4
repo="$(cd "$(dirname "$0")/.." && pwd)"
tools="${DPD_TOOLS_DIR:-$repo/target/tools}"

has_version() { [ -x "$1" ] && [ "$("$1" --version 2>/dev/null)" = "cbindgen $CBINDGEN_VERSION" ]; }

if on_path="$(command -v cbindgen 2>/dev/null)" && has_version "$on_path"; then
  echo "$on_path"
  exit 0
fi
if ! has_version "$tools/bin/cbindgen"; then
  echo "installing cbindgen $CBINDGEN_VERSION into $tools (one-time, a few minutes)" >&2
  cargo install cbindgen --version "=$CBINDGEN_VERSION" --locked --force --root "$tools" >&2
fi
echo "$tools/bin/cbindgen"

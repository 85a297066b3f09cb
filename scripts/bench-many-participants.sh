#!/usr/bin/env bash
# A blr job over N participants in ONE process (crates/dca-service/examples/many_participants.rs,
# the participant code a host links through libdpdist_net), participant i holding diabetes row
# i mod 442, against 3 nodes and the aggregator on loopback. Prints the job's wall time, the
# participants' process CPU per participant, the nodes' and aggregator's CPU, and the in-process
# blr::fit_grouped on the same rows.
#
#   scripts/bench-many-participants.sh [N] [POLL_MS] [STATE_DIR]
# STATE_DIR (default: under the cluster's temporary directory) holds the N ledgers and sealed
# attempts; each is written with fsync, so the disk under it matters.
set -euo pipefail
cd "$(dirname "$0")/.."

n="${1:-10000}"
poll="${2:-2000}"

# shellcheck source=scripts/cluster.sh
. scripts/cluster.sh
start_cluster 10
state="${3:-$work/participants}"
mkdir -p "$state"

cargo build --release -p dca-service --example many_participants >&2
"${CARGO_TARGET_DIR:-target}/release/examples/many_participants" --aggregator "https://$agg_addr" \
  --ca "$work/ca.pem" --analyst-token-file "$work/analyst.token" --state-dir "$state" --n "$n" \
  --poll-ms "$poll"
# The cluster's processes, in start order (cluster.sh): nodes 0, 1, 2, then the aggregator.
names=("node 0" "node 1" "node 2" "aggregator")
for k in "${!pids[@]}"; do
  awk -v who="${names[$k]}" '{ split($0, a, ") "); split(a[2], f, " ");
    printf "%s: CPU %.1f s\n", who, (f[12] + f[13]) / 100 }' "/proc/${pids[$k]}/stat"
done

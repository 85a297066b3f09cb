#!/bin/bash
# `dpdist blr` on the first n diabetes rows (one run per cell, OS randomness) at ε = 1, 5, 10:
# whether it warns that noise dominates, its in-sample MAE against the non-private fit's, and
# the noise sd of its statistics round. Three nodes and an aggregator on loopback, killed on exit.
#
#   cargo build -p dca-service --bins && scripts/measure-blr-rows.sh 19 100 442
#
# BIN overrides the binary (default: $CARGO_TARGET_DIR or target, debug build).
set -u
bin="${BIN:-${CARGO_TARGET_DIR:-target}/debug/dpdist}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
banner_addr() {
  for _ in $(seq 1 300); do grep -q listening "$1" 2>/dev/null && break; sleep 0.1; done
  awk '{for (i = 1; i < NF; i++) if ($i == "on") print $(i + 1)}' "$1"
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=ca -keyout $work/ca.key -out $work/ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -keyout $work/server.key -out $work/server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > $work/san.ext
openssl x509 -req -in $work/server.csr -CA $work/ca.pem -CAkey $work/ca.key -CAcreateserial -days 1 -extfile $work/san.ext -out $work/server.pem 2>/dev/null
echo admin-token-rpe > $work/admin.token; echo analyst-token-rpe > $work/analyst.token
urls=()
for k in 0 1 2; do
  mkdir -p $work/node$k
  $bin node --index $k --listen 127.0.0.1:0 --cert $work/server.pem --key $work/server.key --data-dir $work/node$k --admin-token-file $work/admin.token > $work/node$k.out 2>$work/node$k.err &
  pids+=($!)
  urls+=("https://$(banner_addr $work/node$k.out)")
done
nodes=$(IFS=,; echo "${urls[*]}")
$bin aggregator --listen 127.0.0.1:0 --poll-ms 50 --cert $work/server.pem --key $work/server.key --ca $work/ca.pem --nodes $nodes --admin-token-file $work/admin.token --analyst-token-file $work/analyst.token --db $work/agg.sqlite --budget-epsilon 100 --budget-delta 0.001 > $work/agg.out 2>$work/agg.err &
pids+=($!)
agg="https://$(banner_addr $work/agg.out)"
offset=0
for n in "$@"; do
  head -n $((n + 1)) $repo/examples/data/diabetes.csv > $work/rows$n.csv
  cp $repo/examples/data/diabetes.bounds.csv $work/rows$n.bounds.csv
  for eps in 1 5 10; do
    offset=$((offset + 10))
    out=$($bin blr --aggregator $agg --ca $work/ca.pem --analyst-token-file $work/analyst.token --data $work/rows$n.csv --epsilon $eps --round-offset $offset --upload-secs 300 2>$work/blr-$n-$eps.err)
    warn=$(grep -c WARNING $work/blr-$n-$eps.err)
    echo "$out" | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print(f'n={$n} eps={$eps} warning={$warn} mae={r[\"in_sample_mae\"]:.3f} np={r[\"in_sample_mae_non_private\"]:.3f} noise={r[\"rounds\"][-1][\"noise_sigma_released\"]:.1f}')" || { echo "n=$n eps=$eps failed"; tail -3 $work/blr-$n-$eps.err; }
  done
done

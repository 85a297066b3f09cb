# Sourced by the demo scripts: builds `dpdist` (release), makes fresh certificates (a CA and one
# server certificate for 127.0.0.1) and tokens in a temporary directory, starts M = 3 compute
# nodes and the aggregator server on free loopback ports, and kills every process it started on
# exit. Sets: bin, work, pids, nodes (comma-separated URLs), agg_addr.
#
#   start_cluster BUDGET_EPSILON

cargo build --release -p dca-service --bins >&2
bin="${CARGO_TARGET_DIR:-target}/release/dpdist"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The address a server printed on its first line ("… listening on ADDR …"), waiting up to 10 s.
banner_addr() {
  for _ in $(seq 1 100); do grep -q listening "$1" 2>/dev/null && break; sleep 0.1; done
  awk '{for (i = 1; i < NF; i++) if ($i == "on") print $(i + 1)}' "$1"
}

start_cluster() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=dpdist-demo-ca \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$work/san.ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -days 1 -extfile "$work/san.ext" -out "$work/server.pem" 2>/dev/null
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/admin.token"
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/analyst.token"

  local urls=() k addr
  for k in 0 1 2; do
    mkdir -p "$work/node$k"
    "$bin" node --index "$k" --listen 127.0.0.1:0 --cert "$work/server.pem" --key "$work/server.key" \
      --data-dir "$work/node$k" --admin-token-file "$work/admin.token" > "$work/node$k.out" &
    pids+=($!)
    addr="$(banner_addr "$work/node$k.out")"
    [ -n "$addr" ] || { echo "node $k did not start" >&2; exit 1; }
    urls+=("https://$addr")
    echo "node $k: https://$addr" >&2
  done
  nodes="$(IFS=,; echo "${urls[*]}")"

  "$bin" aggregator --listen 127.0.0.1:0 --cert "$work/server.pem" --key "$work/server.key" --nodes "$nodes" \
    --ca "$work/ca.pem" --admin-token-file "$work/admin.token" --analyst-token-file "$work/analyst.token" \
    --db "$work/aggregator-server.sqlite" --budget-epsilon "$1" --budget-delta 1e-5 \
    > "$work/aggregator.out" 2> "$work/aggregator.err" &
  pids+=($!)
  agg_addr="$(banner_addr "$work/aggregator.out")"
  [ -n "$agg_addr" ] || { echo "the aggregator did not start" >&2; cat "$work/aggregator.err" >&2; exit 1; }
  echo "aggregator: https://$agg_addr" >&2
}

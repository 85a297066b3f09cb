#!/usr/bin/env bash
# DCA over the network on loopback, with fresh TLS certificates: M = 3 compute-node processes and
# the aggregator server process (`dpdist aggregator`). Two parts:
#
# 1. The main job: `dpdist blr` runs DCA paper Alg. 2 on the 442 diabetes rows (one client each,
#    as concurrent tasks of one client process): the DP marginal-std round, the threshold search on
#    auxiliary data, the statistics round, the BLR fit. Both rounds are created on the aggregator,
#    uploaded to the nodes, closed and released by the aggregator. With --insecure-seed S the
#    released statistics are compared with the in-process pipeline's (blr::fit, same seed): they
#    must be bit-identical.
# 2. One noisy round of column sums the step-by-step way: 442 `dpdist client upload` processes
#    (8 at a time), `dpdist round release` (a second release is refused); with --insecure-seed
#    compared with `dpdist round simulate`.
# 3. Iterative learning (DCA paper Sec. 4.2): `dpdist train` fits private logistic regression on
#    the 352 digits 0-vs-8 rows by DP-SGD, one DCA round per iteration on the same aggregator and
#    nodes (round ids offset by 100); with --insecure-seed every iteration's release is compared
#    with the in-process trainer's.
#
# Every process started here is killed on exit.
#
#   scripts/demo-network.sh [--insecure-seed S] [--mode seed|full] [--epsilon E]
set -euo pipefail
cd "$(dirname "$0")/.."

seed=""
mode=seed
epsilon=5
while [ $# -gt 0 ]; do
  case "$1" in
    --insecure-seed) seed="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --epsilon) epsilon="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/cluster.sh
. scripts/cluster.sh
# The aggregator's budget: ε = 50 for the BLR job's two rounds, the extra round and the training
# rounds below (its accountant charges every round in full, without the amplification by
# subsampling that the trainer's own RDP accountant counts).
start_cluster 50

echo "== 1. Alg. 2 over the network (DP std round, statistics round, BLR fit)" >&2
start=$(date +%s.%N)
"$bin" blr --aggregator "https://$agg_addr" --ca "$work/ca.pem" --analyst-token-file "$work/analyst.token" \
  --data examples/data/diabetes.csv --epsilon "$epsilon" --mode "$mode" ${seed:+--insecure-seed "$seed"} \
  > "$work/blr.json"
end=$(date +%s.%N)
python3 - "$work/blr.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for rd in r["rounds"]:
    print(f"round {rd['round']}: released by the aggregator over {rd['clients']} clients, noise sd "
          f"{rd['noise_sigma_released']:.3f} per entry (aggregator's accountant: eps = {rd['aggregator_spent_epsilon']:.4f})")
print("DP std:", " ".join(f"{s:.3f}" for s in r["std_x"]), f"| y {r['std_y']:.3f}")
print(f"thresholds: omega_x = {r['omega_x']:.2f}, omega_y = {r['omega_y']:.2f}")
print("posterior mean:", " ".join(f"{b:.3f}" for b in r["posterior_mean"]))
print(f"fit spent (eps, delta) = ({r['fit_spent_epsilon']:.4f}, {r['fit_spent_delta']:g}); in-sample MAE "
      f"{r['in_sample_mae']:.4f} (non-private {r['in_sample_mae_non_private']:.4f}; the constant "
      f"training mean, NON-PRIVATE, {r['in_sample_mae_constant_non_private']:.4f})")
if "statistics_bit_identical_to_in_process" in r:
    print("network statistics == in-process pipeline statistics, bit for bit:",
          r["statistics_bit_identical_to_in_process"])
PY
echo "job done in $(echo "$end - $start" | bc) s" >&2

echo "== 2. one round step by step (client processes, round release)" >&2

# Client rows: the 10 raw features and the target of each diabetes record (skip the header).
tail -n +2 examples/data/diabetes.csv > "$work/rows.csv"
n="$(wc -l < "$work/rows.csv")"
for i in $(seq 0 $((n - 1))); do head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; echo; done > "$work/tokens.txt"

common=(--nodes "$nodes" --ca "$work/ca.pem" --admin-token-file "$work/admin.token" --db "$work/agg.sqlite"
        --spec "$work/round.config" --budget-epsilon 5 --budget-delta 1e-5)
# |x| <= 400 for every raw value; replacing one row moves the 11-vector by at most 800·sqrt(11) in l2.
id="$("$bin" round create "${common[@]}" --round-number 3 --n-clients "$n" --max-dropped 2 --dim 11 \
      --bound 400 --mode "$mode" --sigma 4000 --l2-sensitivity 2653.3 --tokens-file "$work/tokens.txt")"
echo "round $id created on 3 nodes (N = $n, d = 11, T = 2, $mode mode)" >&2

export DPD_SEED="$seed"
start=$(date +%s.%N)
paste -d' ' <(seq 0 $((n - 1))) "$work/tokens.txt" "$work/rows.csv" | \
  xargs -P 8 -L 1 sh -c '"$0" client upload --nodes "$1" --ca "$2" --spec "$3" --client "$4" --token "$5" --values "$6" ${DPD_SEED:+--insecure-seed "$DPD_SEED"}' \
    "$bin" "$nodes" "$work/ca.pem" "$work/round.config"
end=$(date +%s.%N)
echo "uploads done in $(echo "$end - $start" | bc) s" >&2
"$bin" round status "${common[@]}" >&2

"$bin" round release "${common[@]}" > "$work/release.json"
python3 - "$work/release.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
names = "age sex bmi bp s1 s2 s3 s4 s5 s6 target".split()
print(f"released round {r['round']}: {len(r['clients'])} clients, noise sd {r['noise_sigma_released']:.1f} per sum,"
      f" spent eps = {r['spent_epsilon']:.3f}, delta = {r['spent_delta']:g}")
for n, s in zip(names, r["sum"]):
    print(f"  sum {n:>6} = {s:12.2f}   mean {s / len(r['clients']):9.3f}")
PY
if "$bin" round release "${common[@]}" >/dev/null 2>&1; then
  echo "ERROR: the aggregator released twice" >&2; exit 1
fi
echo "second release refused (as it must be)" >&2

if [ -n "$seed" ]; then
  "$bin" round simulate --spec "$work/round.config" --values-file "$work/rows.csv" --insecure-seed "$seed" > "$work/local.json"
  python3 - "$work/release.json" "$work/local.json" <<'PY'
import json, struct, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
bits = lambda v: [struct.pack("<d", x) for x in v]
same = a["sum_units"] == b["sum_units"] and bits(a["sum"]) == bits(b["sum"])
print("network release == in-process release, bit for bit:", same)
sys.exit(0 if same else 1)
PY
fi

echo "== 3. iterative private logistic regression over the network (digits 0 vs 8)" >&2
"$bin" train --aggregator "https://$agg_addr" --ca "$work/ca.pem" --analyst-token-file "$work/analyst.token" \
  --data examples/data/digits_0_vs_8.csv --label label --feature-bound 16 --epsilon 1 --iterations 20 \
  --round-offset 100 ${seed:+--insecure-seed "$seed"} > "$work/train.json"
python3 - "$work/train.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['iterations']} iterations over {r['clients']} clients on {r['nodes']} nodes, noise multiplier "
      f"z = {r['noise_multiplier']:.3f}, {r['seconds_per_iteration']:.2f} s per iteration")
print(f"trainer spent (eps, delta) = ({r['spent_epsilon']:.4f}, {r['spent_delta']:g}); aggregator's "
      f"accountant after the last round: eps = {r['rounds'][-1]['aggregator_spent_epsilon']:.4f}")
print(f"in-sample accuracy {r['in_sample_accuracy']:.3f}")
if "releases_bit_identical_to_in_process" in r:
    print("network releases == in-process trainer releases, bit for bit:",
          r["releases_bit_identical_to_in_process"])
PY

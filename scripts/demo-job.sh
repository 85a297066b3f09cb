#!/usr/bin/env bash
# A BLR job with the data holders as parties, on loopback: 3 compute nodes, the aggregator, and a
# dozen hospitals, each a `dpdist participant` process that reads only its own CSV (the 442
# diabetes rows split unevenly, 10 to 100 rows each) and its own policy. The analyst creates the
# job with `dpdist job create` (public parameters and the SHA-256 of each hospital's token, no
# data file) and reads the result with `dpdist job result`. One hospital's policy does not allow
# the `bmi` column: it refuses, and the job (T = 2) runs with the other eleven.
#
# The steps run in the order of docs/src/services/jobs.md: each hospital writes its policy and
# starts its participant, which waits for jobs (`--wait-for-job`); then the analyst writes and
# creates the job; the hospitals answer and take part; afterwards each hospital reads its ledger
# (`dpdist participant ledger`).
#
# Every process started here is killed on exit.
#
#   scripts/demo-job.sh [--insecure-seed S] [--epsilon E]
set -euo pipefail
cd "$(dirname "$0")/.."

seed=""
epsilon=2
while [ $# -gt 0 ]; do
  case "$1" in
    --insecure-seed) seed="$2"; shift 2 ;;
    --epsilon) epsilon="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/cluster.sh
. scripts/cluster.sh
start_cluster 10

# The hospitals: their rows, tokens and policies. Only each hospital's own process reads them.
sizes=(10 12 15 20 25 30 35 40 45 50 60 100)
header="$(head -n 1 examples/data/diabetes.csv)"
first=2
roster=()
for h in "${!sizes[@]}"; do
  dir="$work/hospital$h"
  mkdir -p "$dir"
  { echo "$header"; sed -n "${first},$((first + sizes[h] - 1))p" examples/data/diabetes.csv; } > "$dir/rows.csv"
  first=$((first + sizes[h]))
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token"
  roster+=("\"$(sha256sum < "$dir/token" | cut -d' ' -f1)\"")
  columns='"age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target"'
  [ "$h" -eq 4 ] && columns='"age", "sex", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target"'
  printf 'columns = [%s]\nmax_epsilon_per_job = 5.0\ntotal_epsilon = 10.0\n' "$columns" > "$dir/policy.toml"
done

# Step 2: each hospital starts its participant, which waits (up to --wait-for-job seconds) for a
# job whose roster lists its token. There is no job yet.
hospital_pids=()
for h in "${!sizes[@]}"; do
  dir="$work/hospital$h"
  "$bin" participant --aggregator "https://$agg_addr" --ca "$work/ca.pem" --token-file "$dir/token" \
    --data "$dir/rows.csv" --policy "$dir/policy.toml" --state-dir "$dir/state" \
    --wait-for-job 300 --poll-ms 100 ${seed:+--insecure-seed "$seed"} > "$dir/out" 2> "$dir/err" &
  pids+=($!)
  hospital_pids+=($!)
done

# Step 3: the analyst's job file: public bounds of every column (examples/data/diabetes.bounds.csv),
# the budget, T, and the roster. No rows.
{
  echo 'kind = "blr"'
  echo "epsilon = $epsilon"
  echo 'delta = 1e-5'
  echo 'max_dropped = 2'
  echo 'max_rows = 100'
  echo 'answer_window_ms = 30000'
  echo 'upload_window_ms = 60000'
  [ -n "$seed" ] && echo "public_seed = $seed"
  echo "roster = [$(IFS=,; echo "${roster[*]}")]"
  tail -n +2 examples/data/diabetes.bounds.csv | while IFS=, read -r name lo hi; do
    if [ "$name" = target ]; then
      printf '[target]\nname = "%s"\nlo = %s\nhi = %s\n' "$name" "$lo" "$hi"
    else
      printf '[[features]]\nname = "%s"\nlo = %s\nhi = %s\n' "$name" "$lo" "$hi"
    fi
  done
} > "$work/job.toml"

analyst=(--aggregator "https://$agg_addr" --ca "$work/ca.pem" --analyst-token-file "$work/analyst.token")
start=$(date +%s.%N)
job="$("$bin" job create "${analyst[@]}" --spec "$work/job.toml")"
echo "job $job created for ${#sizes[@]} hospitals" >&2

# Steps 4 and 5 run by themselves; the analyst waits for the result.
"$bin" job result "${analyst[@]}" --job "$job" --wait-secs 300 > "$work/result.json"
end=$(date +%s.%N)

# Step 6: each hospital's participant sees the job end (and goes on waiting for the next job);
# its ledger says what it answered and what it was charged.
for h in "${!sizes[@]}"; do
  dir="$work/hospital$h"
  for _ in $(seq 1 300); do
    "$bin" participant ledger --state-dir "$dir/state" --policy "$dir/policy.toml" > "$dir/ledger" 2>&1 || true
    grep -qE "^job $job: (refused|.*; ended )" "$dir/ledger" && break
    kill -0 "${hospital_pids[$h]}" 2>/dev/null || { echo "hospital $h exited:" >&2; cat "$dir/err" >&2; exit 1; }
    sleep 0.1
  done
  grep -q "job $job: " "$dir/ledger" || { echo "hospital $h: no ledger entry for the job" >&2; cat "$dir/ledger" "$dir/err" >&2; exit 1; }
  echo "hospital $h (${sizes[$h]} rows): $(grep "job $job: " "$dir/ledger" | sed "s/^job $job: //")"
done
for p in "${hospital_pids[@]}"; do kill "$p" 2>/dev/null || true; done
"$bin" job status "${analyst[@]}" --job "$job" > "$work/status.json"
python3 - "$work/result.json" "$work/status.json" <<'PY'
import json, sys
r, s = (json.load(open(p)) for p in sys.argv[1:3])
names = "age sex bmi bp s1 s2 s3 s4 s5 s6".split()
print(f"refused: {[(i, why) for i, why in s['refused']]}")
print(f"{len(s['accepted'])} hospitals took part, {r['records']} rows; rounds: "
      + ", ".join(f"{rd['step']} ({len(rd['clients'])} clients)" for rd in s["rounds"]))
print("DP std (x pooled, y):", " ".join(f"{v:.3f}" for v in r["std"][-2:]))
print(f"thresholds: omega_x = {r['thresholds'][0]:.2f}, omega_y = {r['thresholds'][1]:.2f}")
print("posterior mean:", " ".join(f"{n}={b:.3f}" for n, b in zip(names, r["mean"])))
print(f"the job spent (eps, delta) = ({r['spent_epsilon']:.4f}, {r['spent_delta']:g}); zCDP rho "
      f"{s['rho_spent']:.5f} of the {s['rho_reserved']:.5f} reserved")
PY
echo "job done in $(echo "$end - $start" | bc) s" >&2

#!/usr/bin/env bash
# What a job costs over the network: the 442 diabetes rows split over N `dpdist participant`
# processes (as evenly as possible), 3 nodes and the aggregator on loopback. Prints the job's wall
# time (job created → result) and each participant's CPU time (user + system, from wait4).
#
#   scripts/bench-job.sh [N] [--epsilon E]
set -euo pipefail
cd "$(dirname "$0")/.."

n="${1:-50}"
epsilon="${3:-2}"

# shellcheck source=scripts/cluster.sh
. scripts/cluster.sh
start_cluster 10

rows=442
header="$(head -n 1 examples/data/diabetes.csv)"
cols='"age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target"'
roster=()
first=2
max_rows=0
for p in $(seq 0 $((n - 1))); do
  size=$(( rows / n + (p < rows % n ? 1 : 0) ))
  [ "$size" -gt "$max_rows" ] && max_rows=$size
  dir="$work/p$p"
  mkdir -p "$dir"
  { echo "$header"; sed -n "${first},$((first + size - 1))p" examples/data/diabetes.csv; } > "$dir/rows.csv"
  first=$((first + size))
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token"
  roster+=("\"$(sha256sum < "$dir/token" | cut -d' ' -f1)\"")
  printf 'columns = [%s]\nmax_epsilon_per_job = 5.0\ntotal_epsilon = 10.0\n' "$cols" > "$dir/policy.toml"
done
{
  echo 'kind = "blr"'
  echo "epsilon = $epsilon"
  echo 'delta = 1e-5'
  echo 'max_dropped = 2'
  echo "max_rows = $max_rows"
  echo 'answer_window_ms = 60000'
  echo 'upload_window_ms = 120000'
  echo "roster = [$(IFS=,; echo "${roster[*]}")]"
  tail -n +2 examples/data/diabetes.bounds.csv | while IFS=, read -r name lo hi; do
    if [ "$name" = target ]; then printf '[target]\n'; else printf '[[features]]\n'; fi
    printf 'name = "%s"\nlo = %s\nhi = %s\n' "$name" "$lo" "$hi"
  done
} > "$work/job.toml"

analyst=(--aggregator "https://$agg_addr" --ca "$work/ca.pem" --analyst-token-file "$work/analyst.token")
start=$(date +%s.%N)
job="$("$bin" job create "${analyst[@]}" --spec "$work/job.toml")"
waits=()
for p in $(seq 0 $((n - 1))); do
  dir="$work/p$p"
  python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
open(sys.argv[1], "w").write(f"{ru.ru_utime} {ru.ru_stime}\n")
sys.exit(os.waitstatus_to_exitcode(status))' "$dir/cpu" "$bin" participant --aggregator "https://$agg_addr" \
    --ca "$work/ca.pem" --token-file "$dir/token" --data "$dir/rows.csv" --policy "$dir/policy.toml" \
    --state-dir "$dir/state" --job "$job" --poll-ms 100 > /dev/null 2> "$dir/err" &
  pids+=($!)
  waits+=($!)
done
"$bin" job result "${analyst[@]}" --job "$job" --wait-secs 600 > "$work/result.json"
end=$(date +%s.%N)
for w in "${waits[@]}"; do wait "$w"; done
cat "$work"/p*/cpu | python3 -c "
import statistics, sys
cpu = [float(u) + float(s) for u, s in (l.split() for l in sys.stdin if l.strip())]
print(f'$n participants, max_rows $max_rows: job wall time {$end - $start:.2f} s; CPU per participant '
      f'median {statistics.median(cpu) * 1000:.1f} ms, max {max(cpu) * 1000:.1f} ms, total {sum(cpu):.2f} s')
"

#!/usr/bin/env bash
# Discrete Gaussian fill rate of this tree against an older revision, in one paired run.
#
#   scripts/bench-sampler-vs.sh REV [SIGMA ...]     (default REV a943e2a^: the integer-only sampler)
#
# Builds the same 20-line program (15 fills of 10^6 samples into one pre-touched buffer, median
# rate printed) against dp-noise of this tree and of REV (a git worktree under target/), both
# with the workspace's release settings, then runs them alternately with farm-bench when it is
# installed (else one after the other, 3 times each). Measures; asserts nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-a943e2a^}
shift || true
sigmas=("${@:-1048576}")
work=$root/target/sampler-vs
rm -rf "$work"
mkdir -p "$work"
git -C "$root" worktree add -f --detach "$work/old-tree" "$rev" >/dev/null
trap 'git -C "$root" worktree remove --force "$work/old-tree" >/dev/null 2>&1 || true' EXIT
for side in new old; do
    tree=$root
    [ "$side" = old ] && tree=$work/old-tree
    mkdir -p "$work/$side/src"
    cat > "$work/$side/Cargo.toml" <<TOML
[package]
name = "sampler-$side"
version = "0.1.0"
edition = "2021"
[dependencies]
dp-noise = { path = "$tree/crates/dp-noise" }
rand_chacha = "0.9"
rand_core = "0.9"
[profile.release]
codegen-units = 4
[workspace]
TOML
    cat > "$work/$side/src/main.rs" <<'RS'
use rand_core::SeedableRng;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sigma: f64 = args[1].parse().expect("SIGMA");
    let n = 1_000_000;
    let sampler = dp_noise::discrete::DiscreteGaussian::new(sigma).expect("valid sigma");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let mut out = vec![1i64; n];
    let mut rates: Vec<f64> = (0..15)
        .map(|_| {
            let start = std::time::Instant::now();
            sampler.fill(&mut rng, &mut out);
            n as f64 / start.elapsed().as_secs_f64() / 1e6
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let mean_square = out.iter().map(|&x| (x as f64 / sigma).powi(2)).sum::<f64>() / n as f64;
    println!("sigma={sigma}: median {:.1} M samples/s (mean square / sigma^2 = {mean_square:.3})", rates[7]);
}
RS
    (cd "$work/$side" && CARGO_TARGET_DIR="$work/target-$side" cargo build --release --quiet)
done
new=$work/target-new/release/sampler-new
old=$work/target-old/release/sampler-old
for sigma in "${sigmas[@]}"; do
    echo "== sigma = $sigma: this tree (A) against $rev (B)"
    if command -v farm-bench >/dev/null; then
        rm -f "$work/new.txt" "$work/old.txt"
        farm-bench -n 3 --timeout 300 --vs "sh -c 'exec $old $sigma >>$work/old.txt'" \
            -- sh -c "exec $new $sigma >>$work/new.txt" | grep -E "A/B cpu"
        echo "A:"; tail -3 "$work/new.txt"
        echo "B:"; tail -3 "$work/old.txt"
    else
        for _ in 1 2 3; do "$new" "$sigma"; "$old" "$sigma"; done
    fi
done

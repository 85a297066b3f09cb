//! PLR or stacking? A differentially private comparison on held-out rows, so that the library
//! can recommend PLR (and hand back a PLR model) when stacking does worse on the data at hand.
//!
//! Stacking is not better than PLR everywhere: on centralised data each PST-S part sees n/(2K)
//! rows, and at small ε a high level with few rows and a small λ keeps little of its budget
//! (ε′ = ε − log(1 + 1/(2nλ) + 1/(16n²λ²)), docs/src/results/stacking.md has the numbers).
//! Which one wins depends on n, d, ε and the data, so it is measured, privately.
//!
//! Guarantee (ε-DP for the data set, replace-one neighbours). The rows are split at random —
//! independently of their values — into three disjoint parts: T_p (PLR), T_s (the stacked
//! model) and V (validation). PLR is ε_p-DP for T_p, the stacked fit ε_s-DP for T_s (its own
//! guarantee), and the released comparison is
//! (correct_s − correct_p on V) + discrete Laplace noise of scale 2/ε_v (exact, on the integers,
//! Canonne, Kamath & Steinke 2020): one record of V moves the count difference by at most 2 (its
//! term lies in {−1, 0, 1}), so that is ε_v-DP for V, and everything evaluated on
//! V from the two models is post-processing for T_p and T_s. A record lies in exactly one part:
//! parallel composition gives max(ε_p, ε_s, ε_v) overall. Both models are released (each is
//! trained on its own part only), with the recommendation.
//!
//! The decision. Stacking is recommended only when the noisy margin exceeds a threshold t that
//! depends on |V|, ε_v and a level α alone — never on the data's values (|V| follows from n,
//! public under replace-one neighbours), so comparing against it is post-processing of the
//! released margin and costs no privacy. t is chosen so that when stacking
//! is no better than PLR, stacking is recommended with probability at most α. "No better" means:
//! given the two fitted models, the rows of V are independent draws from a population on which
//! the per-row difference d = right_s − right_p ∈ {−1, 0, 1} has mean ≤ 0. Then, for 0 < λ <
//! ε_v/2, Hoeffding's lemma gives E e^{λd} ≤ e^{λ²/2}, and the discrete Laplace noise L
//! (P(L = k) ∝ p^{|k|}, p = e^{−ε_v/2}) has E e^{λL} = (1 − p)² / ((1 − p e^λ)(1 − p e^{−λ})),
//! so Chernoff's bound on the margin M = Σ d + L reads
//! P(M > t) ≤ exp(−λt + |V|λ²/2 + ln E e^{λL}); t is the smallest value for which the best λ
//! brings that to α. Where the noise dominates (small ε_v, few rows), splitting α between the
//! exact Laplace tail and Hoeffding's sampling tail is tighter; `stacking_threshold` takes the
//! smaller of the two, each valid on its own (|V| = 42, ε_v = 1, α = 0.05: Chernoff 17.7, the
//! split 23.6). Comparing M with 0 instead would recommend stacking with probability
//! p/(1 + p) ≈ 0.38 at ε_v = 1 on an exact tie, and more often when the rows' differences cancel.

use dp_noise::PrivacyLoss;
use dp_noise::discrete::DiscreteLaplace;
use dp_noise::rng::RngSource;

use crate::calibration::check_epsilon;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::partition::permutation;
use crate::plr::{PlrConfig, PlrFit, fit_plr};
use crate::stacking::StackedFit;

/// Stream of the three-way row split; PLR's noise is `rng.derive(STREAM_PLR)`, the stacked
/// fit's randomness `rng.derive(STREAM_STACKED)`, the comparison's `rng.derive(STREAM_VALIDATION)`.
pub const STREAM_SELECTION_SPLIT: u64 = (1 << 33) + 1;
/// Stream handed to PLR.
pub const STREAM_PLR: u64 = (1 << 33) + 2;
/// Stream handed to the stacked fit.
pub const STREAM_STACKED: u64 = (1 << 33) + 3;
/// Stream of the comparison's Laplace noise.
pub const STREAM_VALIDATION: u64 = (1 << 33) + 4;

/// Settings of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionConfig {
    /// PLR's settings (its ε is its guarantee for T_p).
    pub plr: PlrConfig,
    /// Share of the rows in V, strictly between 0 and 1; the rest is halved between T_p and T_s.
    pub validation_fraction: f64,
    /// ε_v of the noisy comparison on V.
    pub validation_epsilon: f64,
    /// α, strictly between 0 and 1: the largest probability of recommending stacking when it is
    /// no better than PLR (module docs). Smaller α asks for a larger margin before stacking is
    /// recommended. [`DEFAULT_FALSE_RECOMMENDATION_RATE`] unless there is a reason to change it.
    pub false_recommendation_rate: f64,
}

/// Default α of [`SelectionConfig::false_recommendation_rate`]: stacking is recommended against
/// a model that is no better at most 5% of the time, the conventional level of a one-sided test.
pub const DEFAULT_FALSE_RECOMMENDATION_RATE: f64 = 0.05;

impl SelectionConfig {
    /// PLR's settings, V's share and ε_v, with α = [`DEFAULT_FALSE_RECOMMENDATION_RATE`].
    pub fn new(plr: PlrConfig, validation_fraction: f64, validation_epsilon: f64) -> Self {
        SelectionConfig {
            plr,
            validation_fraction,
            validation_epsilon,
            false_recommendation_rate: DEFAULT_FALSE_RECOMMENDATION_RATE,
        }
    }
}

/// Which model the comparison recommends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recommendation {
    /// The noisy margin did not exceed the threshold: stacking did not show that it wins.
    Plr,
    /// The noisy margin exceeded the threshold: stacking won on V by more than noise and
    /// sampling explain at level α.
    Stacked,
}

/// Both candidates, the noisy comparison and what it all cost.
#[derive(Debug, Clone)]
pub struct Selection {
    /// What the noisy comparison recommends.
    pub recommendation: Recommendation,
    /// (correct_s − correct_p) on V plus Laplace noise: the released statistic.
    pub noisy_margin: f64,
    /// Scale b = 2/ε_v of that noise.
    pub noise_scale: f64,
    /// t: stacking is recommended when `noisy_margin > threshold`. From |V|, ε_v and α only
    /// ([`stacking_threshold`]), so it reveals nothing about the data.
    pub threshold: f64,
    /// Rows in V.
    pub validation_rows: usize,
    /// PLR trained on T_p.
    pub plr: PlrFit,
    /// The stacked model trained on T_s.
    pub stacked: StackedFit,
    /// max(ε_p, ε_s, ε_v), δ = 0: the guarantee for the whole data set.
    pub privacy: PrivacyLoss,
}

/// Row indices of (T_p, T_s, V): V gets round(n·validation_fraction) rows, T_p and T_s halve the
/// rest (T_p the larger half). Independent of the data's values.
pub(crate) fn three_way_split(
    n: usize,
    validation_fraction: f64,
    rng: &RngSource,
) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    if !(validation_fraction > 0.0 && validation_fraction < 1.0) {
        return Err(Error::InvalidParameter {
            name: "validation_fraction",
            value: validation_fraction,
            requirement: "strictly between 0 and 1",
        });
    }
    let n_v = (n as f64 * validation_fraction).round() as usize;
    let n_train = n.saturating_sub(n_v);
    if n_v == 0 || n_train < 2 {
        return Err(Error::PartitionTooSmall {
            rows: n,
            high_rows: n_v,
            min_low_rows: 2,
        });
    }
    let order = permutation(n, &mut rng.derive(STREAM_SELECTION_SPLIT).try_rng()?);
    let (v, train) = order.split_at(n_v);
    let (tp, ts) = train.split_at(n_train.div_ceil(2));
    Ok((tp.to_vec(), ts.to_vec(), v.to_vec()))
}

/// Correct predictions (p ≥ ½ for label +1, p < ½ for −1) of the stacked model minus PLR's.
fn count_margin(plr: &[f64], stacked: &[f64], labels: &[f64]) -> f64 {
    let right = |p: f64, y: f64| f64::from(u8::from((p >= 0.5) == (y > 0.0)));
    plr.iter()
        .zip(stacked)
        .zip(labels)
        .map(|((p, s), y)| right(*s, *y) - right(*p, *y))
        .sum()
}

/// The count difference plus discrete Laplace noise of scale 2/ε_v, and that scale.
fn release_margin(margin: f64, epsilon_v: f64, rng: &RngSource) -> Result<(f64, f64)> {
    let scale = 2.0 / epsilon_v;
    let noise = DiscreteLaplace::new(scale)?.sample(&mut rng.try_rng()?);
    Ok((margin + noise as f64, scale))
}

/// The threshold t on the noisy margin (correct_s − correct_p on V plus discrete Laplace noise
/// of scale 2/ε_v) above which stacking is recommended, so that a stacked model that is no
/// better than PLR is recommended with probability at most α (module docs): the smaller of the
/// Chernoff threshold (the smallest t with min over 0 < λ < ε_v/2 of
/// exp(−λt + |V|λ²/2 + ln E e^{λL}) ≤ α) and the union bound (the exact Laplace tail at α/2
/// plus Hoeffding's at α/2). It depends on `validation_rows`, `validation_epsilon` and `level`
/// (α) only.
pub fn stacking_threshold(
    validation_rows: usize,
    validation_epsilon: f64,
    level: f64,
) -> Result<f64> {
    if !(validation_epsilon.is_finite() && validation_epsilon > 0.0) {
        return Err(Error::InvalidParameter {
            name: "validation_epsilon",
            value: validation_epsilon,
            requirement: "finite and > 0: the comparison is released",
        });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(Error::InvalidParameter {
            name: "false_recommendation_rate",
            value: level,
            requirement: "strictly between 0 and 1",
        });
    }
    let n = validation_rows as f64;
    let half = validation_epsilon / 2.0; // −ln p: the noise's MGF is finite for λ < ε_v/2
    // ln E e^{λL} with 1 − p e^{±λ} = −expm1(±λ − ε_v/2), accurate when λ is near ε_v/2 or ε_v
    // is small.
    let log_mgf = |lambda: f64| {
        2.0 * (-(-half).exp_m1()).ln()
            - (-(lambda - half).exp_m1()).ln()
            - (-(-lambda - half).exp_m1()).ln()
    };
    let bound = |lambda: f64| (n * lambda * lambda / 2.0 + log_mgf(lambda) - level.ln()) / lambda;
    // The bound is quasi-convex in λ (its sublevel sets {λ : g(λ) ≤ tλ}, g convex, are
    // intervals) and grows without limit at both ends, so golden-section search finds its
    // minimum; 200 steps shrink the interval by 0.618^200, far below f64 resolution. Every λ in
    // (0, ε_v/2) gives a valid t, so an imprecise minimum could only make t larger, never wrong.
    let ratio = (5.0_f64.sqrt() - 1.0) / 2.0;
    let (mut lo, mut hi) = (0.0, half);
    let mut a = hi - ratio * (hi - lo);
    let mut b = lo + ratio * (hi - lo);
    let (mut fa, mut fb) = (bound(a), bound(b));
    for _ in 0..200 {
        if fa <= fb {
            hi = b;
            b = a;
            fb = fa;
            a = hi - ratio * (hi - lo);
            fa = bound(a);
        } else {
            lo = a;
            a = b;
            fa = fb;
            b = lo + ratio * (hi - lo);
            fb = bound(b);
        }
    }
    let chernoff = fa.min(fb);
    // The union bound: the exact Laplace tail at α/2 plus Hoeffding's P(Σd > s) ≤ e^{−s²/(2|V|)}
    // at α/2. Looser than Chernoff once sampling matters, tighter when the noise dominates
    // (|V| ≤ 2 at ε_v = 1; |V| = 100 at ε_v = 0.1: 87 against 102). Both are valid, so is the
    // smaller. P(L > k) = p^{k+1}/(1 + p) for integers k ≥ 0, and k ≥ 0 is needed because
    // P(L > −1) = 1/(1 + p) > ½ > α/2.
    let p = (-half).exp();
    let target = level / 2.0 * (1.0 + p);
    let mut k = ((target.ln() / p.ln()).ceil() - 1.0).max(0.0);
    // Guard against rounding in the logarithms: the tail at k must really be ≤ α/2.
    while p.powf(k + 1.0) > target {
        k += 1.0;
    }
    let union = k + (2.0 * n * (2.0 / level).ln()).sqrt();
    Ok(chernoff.min(union))
}

/// Fits PLR on T_p and the stacked model (`fit_stacked`, e.g. a closure around
/// [`crate::fit_pst_f`]) on T_s, compares them on V with Laplace noise, and recommends stacking
/// only when the noisy margin exceeds [`stacking_threshold`] (PLR otherwise, ties included). See
/// the module docs for the guarantee and the threshold.
pub fn select_plr_or_stacking<F>(
    data: &Dataset,
    config: &SelectionConfig,
    fit_stacked: F,
    rng: &RngSource,
) -> Result<Selection>
where
    F: FnOnce(&Dataset, &RngSource) -> Result<StackedFit>,
{
    check_epsilon(config.validation_epsilon)?;
    if config.validation_epsilon.is_infinite() {
        return Err(Error::InvalidParameter {
            name: "validation_epsilon",
            value: config.validation_epsilon,
            requirement: "finite: the comparison is released",
        });
    }
    let (tp, ts, v) = three_way_split(data.n_rows(), config.validation_fraction, rng)?;
    // Before any fit: a bad α fails fast, and t is fixed before the data are looked at.
    let threshold = stacking_threshold(
        v.len(),
        config.validation_epsilon,
        config.false_recommendation_rate,
    )?;
    let plr = fit_plr(&data.subset(&tp), &config.plr, &rng.derive(STREAM_PLR))?;
    let stacked = fit_stacked(&data.subset(&ts), &rng.derive(STREAM_STACKED))?;
    let validation = data.subset(&v);
    let d = data.n_features();
    let mut rows = Vec::with_capacity(v.len() * d);
    for i in 0..v.len() {
        rows.extend((0..d).map(|j| validation.x[(i, j)]));
    }
    let margin = count_margin(
        &plr.model.predict_proba(&rows)?,
        &stacked.model.predict_proba(&rows)?,
        validation.labels(),
    );
    let (noisy_margin, noise_scale) = release_margin(
        margin,
        config.validation_epsilon,
        &rng.derive(STREAM_VALIDATION),
    )?;
    let epsilon = config
        .plr
        .epsilon
        .max(stacked.privacy.epsilon)
        .max(config.validation_epsilon);
    Ok(Selection {
        recommendation: if noisy_margin > threshold {
            Recommendation::Stacked
        } else {
            Recommendation::Plr
        },
        noisy_margin,
        noise_scale,
        threshold,
        validation_rows: v.len(),
        plr,
        stacked,
        privacy: PrivacyLoss {
            epsilon,
            delta: 0.0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::FeatureGroups;
    use crate::stacking::{StackingConfig, fit_pst_f};
    use rand_core::{RngCore, SeedableRng};

    #[test]
    fn the_three_parts_are_disjoint_and_cover_the_rows() {
        let rng = RngSource::InsecureFixedSeed(5);
        let (tp, ts, v) = three_way_split(101, 0.2, &rng).unwrap();
        // round(101 · 0.2) = 20 in V; 81 left, T_p takes ⌈81/2⌉ = 41, T_s 40.
        assert_eq!((tp.len(), ts.len(), v.len()), (41, 40, 20));
        let mut all: Vec<usize> = tp.iter().chain(&ts).chain(&v).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..101).collect::<Vec<_>>());
        assert!(three_way_split(101, 0.0, &rng).is_err());
        assert!(three_way_split(101, 1.0, &rng).is_err());
        assert!(three_way_split(2, 0.5, &rng).is_err());
    }

    #[test]
    fn the_margin_counts_correct_predictions() {
        // Row 1: both right; row 2: only stacked right; row 3: only PLR right; row 4: stacked
        // right (p = ½ counts as +1).
        let labels = [1.0, -1.0, 1.0, 1.0];
        let plr = [0.9, 0.7, 0.6, 0.2];
        let stacked = [0.8, 0.1, 0.4, 0.5];
        assert_eq!(count_margin(&plr, &stacked, &labels), 1.0);
    }

    /// The released margin's noise is discrete Laplace of scale 2/ε_v: at ε_v = 0.5 (b = 4,
    /// p = e^(−1/4)) E|K| = 2p/(1 − p²) = 3.958 by hand and sd|K| ≈ 4.02, so the mean of 4000
    /// draws is within 0.4 (6.3 s.e.) of 3.958; scale 2 or 8 would give 1.92 or 7.98.
    #[test]
    fn the_margin_noise_has_scale_two_over_epsilon_v() {
        let mut total = 0.0;
        for seed in 0..4000 {
            let (noisy, scale) =
                release_margin(10.0, 0.5, &RngSource::InsecureFixedSeed(seed)).unwrap();
            assert_eq!(scale, 4.0);
            assert_eq!(noisy.fract(), 0.0);
            total += (noisy - 10.0).abs();
        }
        let mean = total / 4000.0;
        assert!((mean - 3.958).abs() < 0.4, "{mean}");
    }

    /// Values computed independently (Python, plain `math`): the Chernoff bound minimised over a
    /// grid of 200,000 λ in (0, ε_v/2), and the union bound k + √(2|V| ln(2/α)) with k the
    /// smallest integer such that p^{k+1}/(1 + p) ≤ α/2, p = e^{−ε_v/2}.
    #[test]
    fn the_threshold_matches_values_computed_by_hand() {
        let cases = [
            // (|V|, ε_v, α, t): Chernoff is the smaller one ...
            (42, 1.0, 0.05, 17.702073),
            (600, 0.5, 0.05, 61.657575),
            (100, 2.0, 0.01, 30.641139),
            (1000, 0.1, 0.05, 120.345417),
            // ... the union bound where the noise dominates: k = 67 (p = e^{−0.05}) plus
            // √(200 ln 40) = 20.162; k = 6 (p = e^{−0.5}) plus √(2 ln 40) = 2.716.
            (100, 0.1, 0.05, 87.162030),
            (1, 1.0, 0.05, 8.716203),
        ];
        for (rows, epsilon, level, expected) in cases {
            let t = stacking_threshold(rows, epsilon, level).unwrap();
            assert!((t - expected).abs() < 1e-4, "{rows} {epsilon} {level}: {t}");
        }
        // A smaller α or fewer privacy asks for a larger margin; more rows too (sampling).
        let t = |rows, epsilon, level| stacking_threshold(rows, epsilon, level).unwrap();
        assert!(t(42, 1.0, 0.01) > t(42, 1.0, 0.05));
        assert!(t(42, 0.5, 0.05) > t(42, 1.0, 0.05));
        assert!(t(600, 1.0, 0.05) > t(42, 1.0, 0.05));
        for (epsilon, level) in [
            (0.0, 0.05),
            (f64::INFINITY, 0.05),
            (f64::NAN, 0.05),
            (1.0, 0.0),
            (1.0, 1.0),
            (1.0, f64::NAN),
        ] {
            assert!(stacking_threshold(42, epsilon, level).is_err());
        }
    }

    /// P(L > s) for the discrete Laplace noise with p = e^{−ε_v/2}: P(L ≥ m), m = ⌊s⌋ + 1.
    fn laplace_tail(s: f64, p: f64) -> f64 {
        let m = s.floor() + 1.0;
        if m >= 1.0 {
            p.powf(m) / (1.0 + p)
        } else {
            1.0 - p.powf(1.0 - m) / (1.0 + p)
        }
    }

    /// The hardest tie for the threshold: every row of V a fair ±1 (the two models disagree on
    /// every row and are equally often right). The exact probability that the noisy margin
    /// exceeds t (binomial convolved with the discrete Laplace tail) is within α: 0.0068 at
    /// |V| = 42, ε_v = 1 and 0.0072 at |V| = 600, ε_v = 0.5 by the Python check; comparing with
    /// 0 gives 0.47 and 0.49.
    #[test]
    fn on_a_fair_coin_tie_the_threshold_holds_the_level_exactly() {
        for (rows, epsilon) in [(42usize, 1.0), (600, 0.5)] {
            let p = (-epsilon / 2.0_f64).exp();
            let t = stacking_threshold(rows, epsilon, 0.05).unwrap();
            // Binomial(rows, ½) by repeated convolution (no factorials to overflow).
            let mut pmf = vec![1.0];
            for _ in 0..rows {
                let mut next = vec![0.0; pmf.len() + 1];
                for (j, q) in pmf.iter().enumerate() {
                    next[j] += q / 2.0;
                    next[j + 1] += q / 2.0;
                }
                pmf = next;
            }
            let false_rate = |threshold: f64| -> f64 {
                pmf.iter()
                    .enumerate()
                    .map(|(j, q)| q * laplace_tail(threshold - (2 * j) as f64 + rows as f64, p))
                    .sum()
            };
            assert!(false_rate(t) <= 0.05, "{rows}: {}", false_rate(t));
            assert!(false_rate(0.0) > 0.45, "{rows}: {}", false_rate(0.0));
        }
    }

    /// Two models that agree on every row: the margin is exactly 0, so only the noise can push
    /// it over t = 17.7 (|V| = 42, ε_v = 1), with probability p^18/(1 + p) = 7.7e-5 per draw.
    /// Over 2000 fixed seeds none does, while comparing with 0 would pick stacking in about
    /// p/(1 + p) = 37.8% of them (755 expected, sd 22).
    #[test]
    fn a_tie_recommends_plr() {
        let t = stacking_threshold(42, 1.0, DEFAULT_FALSE_RECOMMENDATION_RATE).unwrap();
        let (mut over_threshold, mut over_zero) = (0, 0);
        for seed in 0..2000 {
            let (noisy, _) = release_margin(0.0, 1.0, &RngSource::InsecureFixedSeed(seed)).unwrap();
            over_threshold += usize::from(noisy > t);
            over_zero += usize::from(noisy > 0.0);
        }
        assert_eq!(over_threshold, 0);
        assert!((600..=900).contains(&over_zero), "{over_zero}");
    }

    /// The same through `select_plr_or_stacking`: on separable data both PLR and the stacked
    /// model (ε = 5) classify every validation row right, the margin is 0 and the
    /// recommendation PLR on every seed.
    #[test]
    fn equally_good_models_give_plr() {
        let data = separable(400);
        let config = SelectionConfig::new(PlrConfig::new(5.0, 0.01), 0.25, 1.0);
        let groups = FeatureGroups::uniform(vec![vec![0]], 1).unwrap();
        for seed in 0..10 {
            let s = select_plr_or_stacking(
                &data,
                &config,
                |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(5.0, 0.01), rng),
                &RngSource::InsecureFixedSeed(seed),
            )
            .unwrap();
            assert_eq!(s.recommendation, Recommendation::Plr, "seed {seed}");
            assert!(s.noisy_margin <= s.threshold);
        }
    }

    /// A clearly better stacked model is still recommended. Feature 0 decides the label; 19
    /// more features are small noise. PLR gets ε = 0.05 (its objective noise, ‖b‖ ≈ 20·2/ε′
    /// with ε′ ≈ 0.017, swamps the signal at λ = 0.01), the stacked model ε = 5 with feature 0
    /// in a group of its own. On 1000 validation rows the noisy margin is 267 with this seed,
    /// against t = 77.7 (|V| = 1000, ε_v = 1).
    #[test]
    fn a_clearly_better_stacked_model_is_recommended() {
        let (n, d) = (4000, 20);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        let mut x = Vec::with_capacity(n * d);
        let mut y = Vec::with_capacity(n);
        for i in 0..n {
            let positive = i % 2 == 0;
            x.push(if positive { 0.5 } else { -0.5 });
            // Uniform on [−0.1, 0.1) from the top 53 bits.
            x.extend(
                (1..d).map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 0.2 - 0.1),
            );
            y.push(f64::from(u8::from(positive)));
        }
        let data = Dataset::from_rows(&x, d, &y).unwrap();
        let config = SelectionConfig::new(PlrConfig::new(0.05, 0.01), 0.25, 1.0);
        let groups = FeatureGroups::uniform(vec![vec![0], (1..d).collect::<Vec<_>>()], d).unwrap();
        let s = select_plr_or_stacking(
            &data,
            &config,
            |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(5.0, 0.01), rng),
            &RngSource::InsecureFixedSeed(4),
        )
        .unwrap();
        assert_eq!(s.validation_rows, 1000);
        assert!(
            s.noisy_margin > s.threshold + 100.0,
            "{} {}",
            s.noisy_margin,
            s.threshold
        );
        assert_eq!(s.recommendation, Recommendation::Stacked);
    }

    /// One feature that decides the label; PLR sees it, the stacked model's only group is
    /// given importance on it too, so the guarantee and the bookkeeping can be checked.
    fn separable(n: usize) -> Dataset {
        let x: Vec<f64> = (0..n)
            .map(|i| if i % 2 == 0 { 0.9 } else { -0.9 })
            .collect();
        let y: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { 0.0 }).collect();
        Dataset::from_rows(&x, 1, &y).unwrap()
    }

    #[test]
    fn privacy_is_the_largest_part_budget_and_the_noise_scale_is_two_over_epsilon_v() {
        let data = separable(400);
        let config = SelectionConfig::new(PlrConfig::new(0.7, 0.1), 0.25, 0.4);
        let groups = FeatureGroups::uniform(vec![vec![0]], 1).unwrap();
        let s = select_plr_or_stacking(
            &data,
            &config,
            |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(1.3, 0.1), rng),
            &RngSource::InsecureFixedSeed(9),
        )
        .unwrap();
        // Parallel composition over disjoint parts: max(0.7, 1.3, 0.4) = 1.3; b = 2/0.4 = 5.
        assert_eq!(s.privacy.epsilon, 1.3);
        assert_eq!(s.privacy.delta, 0.0);
        assert_eq!(s.noise_scale, 5.0);
        assert_eq!(s.validation_rows, 100);
        assert_eq!(s.threshold, stacking_threshold(100, 0.4, 0.05).unwrap());
        let bad_level = SelectionConfig {
            false_recommendation_rate: 0.0,
            ..config.clone()
        };
        assert!(
            select_plr_or_stacking(
                &data,
                &bad_level,
                |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(1.0, 0.1), rng),
                &RngSource::InsecureFixedSeed(9),
            )
            .is_err()
        );
        assert_eq!(s.plr.privacy.epsilon, 0.7);
        let bad = SelectionConfig {
            validation_epsilon: f64::INFINITY,
            ..config
        };
        assert!(
            select_plr_or_stacking(
                &data,
                &bad,
                |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(1.0, 0.1), rng),
                &RngSource::InsecureFixedSeed(9),
            )
            .is_err()
        );
    }

    /// A stacked "model" that is always wrong loses to PLR on separable data: with 200
    /// validation rows the true margin is about −200 and the noise scale 2/ε_v = 2, so the
    /// recommendation is PLR unless the Laplace draw exceeds ~100 scales (probability e^−100).
    #[test]
    fn a_worse_stacked_model_is_not_recommended() {
        let data = separable(800);
        let config = SelectionConfig::new(PlrConfig::new(5.0, 0.01), 0.25, 1.0);
        let groups = FeatureGroups::uniform(vec![vec![0]], 1).unwrap();
        let s = select_plr_or_stacking(
            &data,
            &config,
            |part, rng| {
                let mut fit = fit_pst_f(part, &groups, &StackingConfig::new(5.0, 0.01), rng)?;
                // Flip the stacked model: its high-level weight negated.
                let low = fit.model.low_level().to_vec();
                let w: Vec<f64> = fit
                    .model
                    .high_level()
                    .weights()
                    .iter()
                    .map(|w| -w.abs() - 1.0)
                    .collect();
                let sign = fit.model.low_level()[0].model.weights()[0].signum();
                let high = crate::model::LogisticModel::new(
                    w.iter().map(|w| w * sign).collect(),
                    fit.model.high_level().input_radius(),
                )?;
                fit.model = crate::stacking::StackedModel::new(1, low, high)?;
                Ok(fit)
            },
            &RngSource::InsecureFixedSeed(3),
        )
        .unwrap();
        assert_eq!(s.recommendation, Recommendation::Plr, "{}", s.noisy_margin);
        assert!(s.noisy_margin < -100.0, "{}", s.noisy_margin);
    }
}

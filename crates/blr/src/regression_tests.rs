//! Tests of [`super`]: values computed by hand on tiny designs, the ranges round, the ridge.

use super::*;
use crate::design::PublicRange;

fn one_column(intercept: bool) -> Design {
    Design {
        x: vec![PublicRange::new(0.0, 10.0).unwrap()],
        y: PublicRange::new(0.0, 40.0).unwrap(),
        intercept,
        shares: Default::default(),
        indicator_groups: Vec::new(),
    }
}

fn exact(design: &Design, x: &[f64], y: &[f64]) -> SuffStats {
    let z = design.rows(x).unwrap();
    let t: Vec<f64> = y.iter().map(|v| design.y.to_unit(*v)).collect();
    SuffStats::compute(&z, &t, y.len(), design.width()).unwrap()
}

fn noise(sd: f64) -> BlockNoise {
    BlockNoise {
        gram: sd,
        cross: sd,
        yy: sd,
    }
}

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() < tol, "{a} vs {b}");
}

#[test]
fn exact_statistics_give_lms_coefficients_errors_and_r2_in_the_datas_units() {
    // x = 1..4, y = (5, 9, 10, 14): by hand, slope Sxy/Sxx = 14/5 = 2.8, intercept
    // 9.5 − 2.8·2.5 = 2.5, RSS = 1.8, TSS = 41, σ̂² = 1.8/2, se(slope) = √(0.9/5),
    // se(intercept) = √(0.9 (1/4 + 2.5²/5)), adjusted R² = 1 − (1.8/2)/(41/3).
    let design = one_column(true);
    let (x, y) = ([1.0, 2.0, 3.0, 4.0], [5.0, 9.0, 10.0, 14.0]);
    let fit =
        regression_from_stats(&design, &exact(&design, &x, &y), BlockNoise::NONE, 1e-12).unwrap();
    close(fit.coefficients[0], 2.8, 1e-9);
    close(fit.intercept, 2.5, 1e-9);
    close(fit.residual_sd, 0.9f64.sqrt(), 1e-9);
    let se = fit.std_errors();
    close(se[1], (0.9f64 / 5.0).sqrt(), 1e-9);
    close(se[0], (0.9f64 * (0.25 + 6.25 / 5.0)).sqrt(), 1e-9);
    close(fit.r_squared.unwrap(), 1.0 - 0.9 / (41.0 / 3.0), 1e-9);
    close(fit.constant, 9.5, 1e-12);
    assert_eq!(fit.ridge, 0.0);
    assert!(fit.warnings.is_empty(), "{:?}", fit.warnings);
    let p = fit.predict(&[2.0, 100.0]).unwrap();
    close(p[0], 2.5 + 5.6, 1e-9);
    // x = 100 is clipped to its range's top (10) as in the fit.
    close(p[1], 2.5 + 28.0, 1e-9);
    let ci = fit.confint(0.95).unwrap();
    close(ci[1].0, 2.8 - 1.959963984540054 * se[1], 1e-6);
    assert!(fit.confint(1.0).is_err() && fit.predict(&[f64::NAN]).is_err());
}

#[test]
fn an_indicator_groups_slopes_are_the_level_effects_in_the_datas_units() {
    // y = 2 + effect[level] + x over a reference level and five others (kept 0/1 on the design)
    // and x ∈ {0, 1} on the public range [0, 4] (mapped onto [−1, 1]): exact statistics give
    // lm's coefficients — intercept 2, each level's effect, 1 per x.
    let effects = [3.0, 5.0, -1.0, 4.0, 2.0];
    let mut x_ranges = vec![PublicRange::new(0.0, 1.0).unwrap(); 5];
    x_ranges.push(PublicRange::new(0.0, 4.0).unwrap());
    let design = Design {
        x: x_ranges,
        y: PublicRange::new(-10.0, 20.0).unwrap(),
        intercept: true,
        shares: Default::default(),
        indicator_groups: vec![(0..5).collect()],
    };
    design.validate().unwrap();
    assert_eq!(design.column_map(0), (0.0, 1.0));
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for level in 0..=5 {
        for v in [0.0, 1.0] {
            let row: Vec<f64> = (1..=5).map(|l| f64::from(u8::from(l == level))).collect();
            y.push(2.0 + (1..=5).map(|l| row[l - 1] * effects[l - 1]).sum::<f64>() + v);
            x.extend(row);
            x.push(v);
        }
    }
    let fit =
        regression_from_stats(&design, &exact(&design, &x, &y), BlockNoise::NONE, 1e-12).unwrap();
    close(fit.intercept, 2.0, 1e-9);
    for (b, e) in fit.coefficients.iter().zip(effects) {
        close(*b, e, 1e-9);
    }
    close(fit.coefficients[5], 1.0, 1e-9);
    close(
        fit.predict(&[0.0, 1.0, 0.0, 0.0, 0.0, 1.0]).unwrap()[0],
        8.0,
        1e-9,
    );
    // A record with two levels set is refused, by the fit's rows and by predict alike.
    let e = fit
        .predict(&[1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("columns 0 and 1 are both 1"), "{e}");
}

#[test]
fn the_ranges_round_narrows_to_the_data_and_both_rounds_spend_the_budget_once() {
    // y = 50 + 2x on x ∈ [100, 200] (public x ∈ [0, 1000], y ∈ [0, 5000]): the data fill a
    // tenth of x's public range and 4% of y's. The ranges round narrows both around the data (within the
    // public ranges); both rounds together are charged the whole budget, and the slope is
    // found, which one round on the public ranges cannot at this n and ε.
    let n = 20_000;
    let x: Vec<f64> = (0..n)
        .map(|i| 100.0 + 100.0 * (i as f64 / n as f64))
        .collect();
    let y: Vec<f64> = x.iter().map(|v| 50.0 + 2.0 * v).collect();
    let design = Design::new(
        vec![PublicRange::new(0.0, 1000.0).unwrap()],
        PublicRange::new(0.0, 5000.0).unwrap(),
    )
    .unwrap();
    let budget = PrivacyLoss {
        epsilon: 1.0,
        delta: 1e-5,
    };
    let config = RegressionConfig {
        aggregation: Aggregation::Trusted,
        ..RegressionConfig::new(design.clone(), budget)
    };
    let fit = fit_regression(&x, &y, &config, RngSource::InsecureFixedSeed(3)).unwrap();
    close(fit.spent.epsilon, 1.0, 1e-6);
    close(fit.spent.delta, 1e-5, 1e-12);
    let (kept_x, kept_y) = (fit.design.x[0], fit.design.y);
    assert!(kept_x.lower <= 110.0 && kept_x.upper >= 190.0, "{kept_x:?}");
    assert!(kept_x.upper - kept_x.lower < 500.0, "{kept_x:?}");
    assert!(kept_y.lower <= 270.0 && kept_y.upper >= 430.0, "{kept_y:?}");
    assert!(kept_y.upper - kept_y.lower < 2500.0, "{kept_y:?}");
    assert!(fit.warnings.is_empty(), "{:?}", fit.warnings);
    close(fit.coefficients[0], 2.0, 0.2);
    let one_round = RegressionConfig {
        narrowing: None,
        ..config
    };
    let plain = fit_regression(&x, &y, &one_round, RngSource::InsecureFixedSeed(3)).unwrap();
    assert_eq!(plain.design, design);
    assert!(
        !plain.warnings.is_empty(),
        "the public ranges alone: a constant"
    );
}

#[test]
fn without_an_intercept_the_line_goes_through_the_centres_of_the_ranges() {
    // ỹ = b x̃ through (x, y) = (5, 20): on y = 20 + 3 (x − 5) the slope is 3.
    let design = one_column(false);
    let x = [1.0, 2.0, 8.0, 9.0];
    let y: Vec<f64> = x.iter().map(|v| 20.0 + 3.0 * (v - 5.0)).collect();
    let fit =
        regression_from_stats(&design, &exact(&design, &x, &y), BlockNoise::NONE, 1e-12).unwrap();
    close(fit.coefficients[0], 3.0, 1e-9);
    close(fit.intercept, 5.0, 1e-9);
}

/// Statistics of a two-column design with an intercept whose x̃ and ỹ have mean 0.
fn centred_stats(n: usize, gram: [f64; 3], xy: [f64; 2], yy: f64) -> (Design, SuffStats) {
    let r = PublicRange::new(-1.0, 1.0).unwrap();
    let design = Design::new(vec![r, r], r).unwrap();
    let stats = SuffStats {
        d: 3,
        n,
        xx: vec![n as f64, 0.0, 0.0, gram[0], gram[1], gram[2]],
        xy: vec![0.0, xy[0], xy[1]],
        yy,
    };
    (design, stats)
}

#[test]
fn a_fit_no_better_than_the_constant_says_so() {
    // y unrelated to x: Σx̃x̃ᵀ = 100 I, Σx̃ỹ = (3, −2) (noise of sd 3), Σỹ² = 10, n = 1000.
    // Explained ≈ 13/100, the noise's share 9 · 2/100 = 0.18, so the adjusted R² is about
    // 1 − ((10 − 0.13 + 0.18)/997)/(10/999) < 0.
    let (design, stats) = centred_stats(1000, [100.0, 0.0, 100.0], [3.0, -2.0], 10.0);
    let fit = regression_from_stats(&design, &stats, noise(3.0), 1.0).unwrap();
    // The larger ridges of the search shrink the noise's share and so do a little better,
    // never above 0.
    let r2 = fit.r_squared.unwrap();
    let at_base = 1.0 - ((10.0 - 0.13 + 0.18) / 997.0) / (10.0 / 999.0);
    assert!(r2 >= at_base - 2e-4 && r2 < 0.0, "{r2} vs {at_base}");
    assert_eq!(fit.coefficients, vec![0.0, 0.0]);
    assert!(fit.std_errors()[1].is_nan() && fit.std_errors()[0] > 0.0);
    assert!(
        fit.warnings
            .iter()
            .any(|w| w.contains("no slope is better than the constant"))
    );
    // The same statistics released without noise are a (weak) fit: no warning.
    let fit = regression_from_stats(&design, &stats, BlockNoise::NONE, 1.0).unwrap();
    assert!(fit.r_squared.unwrap() > 0.0 && fit.warnings.is_empty());
    // An R² above 0 but within the release's noise is not shown either: Σx̃ỹ = (6, 0) gives
    // explained ≈ 36/100 − 9·2/100 = 0.18 of TSS 10 (R² ≈ 0.018), while the noise sd of
    // the explained sum is √(2·3⁴·2/100² + 4·3²·0.06²) ≈ 0.40, so of R² ≈ 0.04.
    let (design, stats) = centred_stats(1000, [100.0, 0.0, 100.0], [6.0, 0.0], 10.0);
    let fit = regression_from_stats(&design, &stats, noise(3.0), 1.0).unwrap();
    let r2 = fit.r_squared.unwrap();
    assert!(
        r2 > 0.0 && r2 < 2.0 * fit.r_squared_sd,
        "{r2} {}",
        fit.r_squared_sd
    );
    close(fit.r_squared_sd, 0.040, 0.005);
    assert_eq!(fit.coefficients, vec![0.0, 0.0]);
    assert!(fit.warnings[0].contains("by more than the release's noise"));
    // Noise that swamps Σỹ² leaves no R² at all.
    let (design, stats) = centred_stats(1000, [100.0, 0.0, 100.0], [3.0, -2.0], -1.0);
    let fit = regression_from_stats(&design, &stats, noise(3.0), 1.0).unwrap();
    assert!(fit.r_squared.is_none() && fit.warnings[0].contains("not positive"));
}

#[test]
fn intervals_carry_the_noise_of_the_released_means_and_of_the_intercepts_row() {
    // One column on [−1, 1] (data units = unit scale), n = 100, x̃ mean m = 0.5, ỹ mean
    // −0.5, centred Gram C = Σx̃² − n m² = 20, centred cross product c = 10, TSS = 10;
    // noise sd 1 in every block, λ₀ ≈ 0 so M = C = 20 (ridge 0: the edge 2 is below 20).
    // By hand: b = c/M = 0.5, a = m_y − b m = −0.75.
    let r = PublicRange::new(-1.0, 1.0).unwrap();
    let design = Design::new(vec![r], r).unwrap();
    let stats = SuffStats {
        d: 2,
        n: 100,
        xx: vec![100.0, 50.0, 45.0],
        xy: vec![-50.0, -15.0],
        yy: 35.0,
    };
    let fit = regression_from_stats(&design, &stats, noise(1.0), 1e-12).unwrap();
    assert_eq!(fit.ridge, 0.0);
    close(fit.coefficients[0], 0.5, 1e-9);
    close(fit.intercept, -0.75, 1e-9);
    // σ̂² = RSS′/(n − p), RSS′ = TSS − (b c − σ_c²/M) = 10 − (5 − 0.05) = 5.05.
    let s2 = 5.05 / 98.0;
    // Residuals of the normal equations under the noise (σ_G = σ_c = 1):
    // Var r₀ = 1 + b² = 1.25, Var r₁ = 1 + a² + b² = 1.8125, Cov(r₀, r₁) = a b = −0.375.
    // δb = (r₁ − m r₀)/M: Var = (1.8125 + 2·0.5·0.375 + 0.25·1.25)/400 = 2.5/400.
    // δa = (1/n + m²/M) r₀ − (m/M) r₁ = 0.0225 r₀ − 0.025 r₁:
    // Var = 0.0225²·1.25 + 0.025²·1.8125 + 2·0.0225·0.025·0.375 = 0.0021875;
    // Cov(δa, δb) = [0.0225 (−0.375 − 0.625) − 0.025 (1.8125 + 0.1875)]/20 = −0.003625.
    // Sampling: σ̂² (1/n + m²/M) = 0.0225 σ̂² for a, σ̂²/M for b, −σ̂² m/M between them.
    close(fit.covariance[(1, 1)], s2 / 20.0 + 2.5 / 400.0, 1e-12);
    close(fit.covariance[(0, 0)], 0.0225 * s2 + 0.0021875, 1e-12);
    close(fit.covariance[(0, 1)], -0.025 * s2 - 0.003625, 1e-12);
    close(fit.covariance[(1, 0)], fit.covariance[(0, 1)], 1e-15);
    // Centred data with a = 0 and m = 0 keep the mean-known form (σ_c² + σ_G² b²)/M².
    let stats = SuffStats {
        d: 2,
        n: 100,
        xx: vec![100.0, 0.0, 20.0],
        xy: vec![0.0, 10.0],
        yy: 10.0,
    };
    let fit = regression_from_stats(&design, &stats, noise(1.0), 1e-12).unwrap();
    close(fit.covariance[(1, 1)], s2 / 20.0 + 1.25 / 400.0, 1e-12);
    close(fit.covariance[(0, 0)], s2 / 100.0 + 1.25 / 1e4, 1e-12);
}

#[test]
fn the_first_order_noise_covariance_matches_the_spread_of_fits_to_noisy_releases() {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;
    use rand_distr::{Distribution, Normal};
    // Population statistics (no sampling error) of two columns on [−1, 1], n = 1000, means
    // m = (0.4, −0.3), m_y = −0.6, centred Gram C = [[300, 100], [100, 200]], slopes
    // β = (0.5, −0.4), so c = Cβ = (110, −30), a = m_y − βᵀm = −0.92 and TSS = βᵀCβ + 30.
    let r = PublicRange::new(-1.0, 1.0).unwrap();
    let design = Design::new(vec![r, r], r).unwrap();
    let (n, m, my) = (1000.0, [0.4, -0.3], -0.6);
    let c_mat = [[300.0, 100.0], [100.0, 200.0]];
    let c = [110.0, -30.0];
    let mut xx = vec![0.0; 6];
    xx[packed_index(0, 0, 3)] = n;
    for j in 0..2 {
        xx[packed_index(0, j + 1, 3)] = n * m[j];
        for k in j..2 {
            xx[packed_index(j + 1, k + 1, 3)] = c_mat[j][k] + n * m[j] * m[k];
        }
    }
    let xy = vec![n * my, c[0] + n * m[0] * my, c[1] + n * m[1] * my];
    let yy = 67.0 + 30.0 + n * my * my;
    let sd = 5.0;
    let mut rng = ChaCha20Rng::seed_from_u64(40);
    let normal = Normal::new(0.0, sd).unwrap();
    let draws = 4000;
    let mut thetas = Vec::with_capacity(draws);
    for _ in 0..draws {
        let mut noisy = SuffStats {
            d: 3,
            n: 1000,
            xx: xx.clone(),
            xy: xy.clone(),
            yy,
        };
        // Every released entry but the constant's own (n, public).
        noisy.xx[1..]
            .iter_mut()
            .for_each(|v| *v += normal.sample(&mut rng));
        noisy
            .xy
            .iter_mut()
            .for_each(|v| *v += normal.sample(&mut rng));
        noisy.yy += normal.sample(&mut rng);
        let fit = regression_from_stats(&design, &noisy, noise(sd), 1e-12).unwrap();
        assert_eq!(fit.ridge, 0.0);
        thetas.push([fit.intercept, fit.coefficients[0], fit.coefficients[1]]);
    }
    let mean: Vec<f64> = (0..3)
        .map(|i| thetas.iter().map(|t| t[i]).sum::<f64>() / draws as f64)
        .collect();
    let cov = |i: usize, j: usize| {
        thetas
            .iter()
            .map(|t| (t[i] - mean[i]) * (t[j] - mean[j]))
            .sum::<f64>()
            / (draws as f64 - 1.0)
    };
    // The formula at the population values (M = C: no ridge, λ₀ ≈ 0).
    let det = c_mat[0][0] * c_mat[1][1] - c_mat[0][1] * c_mat[1][0];
    let m_inv = Mat::from_fn(2, 2, |i, j| match (i, j) {
        (0, 0) => c_mat[1][1] / det,
        (1, 1) => c_mat[0][0] / det,
        _ => -c_mat[0][1] / det,
    });
    let map = solution_map(&m_inv, &m, n, true);
    let expected = release_noise_covariance(&map, &[-0.92, 0.5, -0.4], noise(sd), true);
    // 4000 draws: a variance's relative sd is √(2/4000) ≈ 2.2%, so 10% is 4.5 sds.
    for i in 0..3 {
        let ratio = cov(i, i) / expected[(i, i)];
        assert!((ratio - 1.0).abs() < 0.1, "{i}: {ratio}");
    }
    for (i, j) in [(0, 1), (0, 2), (1, 2)] {
        let corr = |v: f64, a: f64, b: f64| v / (a * b).sqrt();
        let got = corr(cov(i, j), cov(i, i), cov(j, j));
        let want = corr(expected[(i, j)], expected[(i, i)], expected[(j, j)]);
        assert!((got - want).abs() < 0.06, "({i}, {j}): {got} vs {want}");
    }
    // The mean-known form (σ_c² + σ_G²‖b‖²)M⁻² alone (the earlier intervals) is far too
    // narrow here: a = −0.92 makes σ_G² a² the largest term.
    let m_inv2 = &m_inv * &m_inv;
    for i in 0..2 {
        let known = sd * sd * (1.0 + 0.41) * m_inv2[(i, i)];
        let ratio = cov(i + 1, i + 1) / known;
        assert!(ratio > 1.5, "{i}: {ratio}");
    }
}

#[test]
fn the_ridge_is_zero_on_well_conditioned_data_and_lifts_a_collinear_gram_to_the_noise() {
    // Noise sd 1 per entry, d = 2: the noise's spectral edge is 2·1·√2.
    let edge = 2.0 * 2f64.sqrt();
    let (design, stats) = centred_stats(1000, [1000.0, 0.0, 1000.0], [500.0, 250.0], 900.0);
    let fit = regression_from_stats(&design, &stats, noise(1.0), 1.0).unwrap();
    assert_eq!(fit.ridge, 0.0);
    // Eigenvalues 1999.9 and 0.1: the adaptive ridge is edge − 0.1, and the search only
    // adds 4ᵏ edges to it.
    let (design, stats) = centred_stats(1000, [1000.0, 999.9, 1000.0], [500.0, 499.0], 900.0);
    let fit = regression_from_stats(&design, &stats, noise(1.0), 1.0).unwrap();
    let steps = (fit.ridge - (edge - 0.1)) / edge;
    assert!(
        [0.0, 1.0, 4.0, 16.0, 64.0, 256.0, 1024.0]
            .iter()
            .any(|k| (steps - k).abs() < 1e-9),
        "{}",
        fit.ridge
    );
    // Along (1, −1) the released c̃ is (1/√2)·1 = 0.71 of noise: unridged that direction
    // would get 0.71/0.1 ≈ 7; with the ridge it stays below 0.71/edge.
    let diff = (fit.coefficients[0] - fit.coefficients[1]) / 2f64.sqrt();
    assert!(diff.abs() < 1.0 / edge, "{diff}");
}

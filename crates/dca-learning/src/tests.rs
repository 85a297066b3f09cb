//! Behavioural and statistical tests of the trainer. Statistical tests use fixed seeds and
//! thresholds at α = 1e-6, so a failure means a wrong distribution, not bad luck.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::*;

/// Two-sided KS critical value at α = 1e-6 for n samples (asymptotic: sqrt(ln(2/α)/(2n))).
fn ks_critical(n: usize) -> f64 {
    ((2.0f64 / 1e-6).ln() / (2.0 * n as f64)).sqrt()
}

/// Φ(x) from erfc (Numerical Recipes' Chebyshev erfc, fractional error < 1.2e-7 — far below
/// the KS thresholds used here).
fn normal_cdf(x: f64) -> f64 {
    let z = (x / std::f64::consts::SQRT_2).abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    // r = erfc(|x|/√2); Φ(x) = erfc(−x/√2)/2.
    if x >= 0.0 { 1.0 - 0.5 * r } else { 0.5 * r }
}

/// The KS distance between the samples and N(0, σ²).
fn ks_distance(samples: &mut [f64], sigma: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    samples
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = normal_cdf(x / sigma);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// N records with ‖x‖ ≤ 1 and 0/1 labels from a logistic model.
fn logistic_records(n: usize, d: usize, seed: u64) -> Records {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let w: Vec<f64> = (0..d)
        .map(|j| if j % 2 == 0 { 3.0 } else { -2.0 })
        .collect();
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d)
            .map(|_| (2.0 * unit() - 1.0) / (d as f64).sqrt())
            .collect();
        let p = 1.0 / (1.0 + (-row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()).exp());
        y.push(if unit() < p { 1.0 } else { 0.0 });
        x.extend(row);
    }
    Records::new(x, d, y).unwrap()
}

fn private_config(z: f64, budget_eps: f64, sampling: ClientSampling, t: usize) -> TrainerConfig {
    TrainerConfig {
        model: Model::Logistic {
            l2: 0.01,
            intercept: false,
        },
        sampling,
        clip_norm: 0.5,
        privacy: Privacy::Private {
            budget: PrivacyLoss::new(budget_eps, 1e-5).unwrap(),
            noise_multiplier: z,
        },
        optimizer: Optimizer::Sgd {
            learning_rate: 1e-12,
        },
        n_nodes: 3,
        max_dropped: t,
    }
}

/// Σ_i clip(∇ℓ_i(θ), C) over the given clients, computed here independently of the trainer.
fn clipped_sum(model: Model, params: &[f64], records: &Records, c: f64, who: &[usize]) -> Vec<f64> {
    let mut sum = vec![0.0; params.len()];
    let mut g = vec![0.0; params.len()];
    for &i in who {
        model.record_gradient(params, records.x(i), records.y(i), &mut g);
        let norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
        let s = if norm > c { c / norm } else { 1.0 };
        sum.iter_mut().zip(&g).for_each(|(a, b)| *a += s * b);
    }
    sum
}

/// The released sum is the clipped gradient sum plus noise of exactly the stated σ: with every
/// client sampled (q = 1), release − exact clipped sum over 200 rounds × d = 100 coordinates
/// (20 000 values) passes a KS test against N(0, σ²) at α = 1e-6, where σ is worked out by hand
/// (z·C·√(n_included/(N − T − 1))), with and without T dropouts; the same residuals against
/// 1.2σ and 0.8σ are rejected.
#[test]
fn released_sum_is_clipped_sum_plus_stated_noise() {
    let (n, d, t, z, c) = (40usize, 100usize, 3usize, 1.3, 0.5);
    let records = logistic_records(n, d, 7);
    for dropped in [vec![], vec![4usize, 17, 33]] {
        let config = private_config(z, 1e9, ClientSampling::Poisson { rate: 1.0 }, t);
        let mut trainer = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(99)).unwrap();
        let present: Vec<usize> = (0..n).filter(|i| !dropped.contains(i)).collect();
        let stated = z * c * (present.len() as f64 / (n - t - 1) as f64).sqrt();
        let mut residuals = Vec::new();
        for _ in 0..200 {
            let params = trainer.params().to_vec();
            let want = clipped_sum(config.model, &params, &records, c, &present);
            let report = trainer.step(&records, &dropped).unwrap();
            assert_eq!(report.n_included, present.len());
            assert!((report.noise_sigma_released - stated).abs() < 1e-12 * stated);
            residuals.extend(report.released_sum.iter().zip(&want).map(|(r, w)| r - w));
        }
        let crit = ks_critical(residuals.len());
        let dist = ks_distance(&mut residuals, stated);
        assert!(dist < crit, "dropped {dropped:?}: KS {dist} >= {crit}");
        for wrong in [1.2, 0.8] {
            let dist = ks_distance(&mut residuals, wrong * stated);
            assert!(
                dist > crit,
                "wrong σ ×{wrong} not rejected: KS {dist} < {crit}"
            );
        }
    }
}

/// Worst-case neighbours: client 0's record replaced by one with a 10^6-times larger x (and
/// the other label) moves the released sum by at most C — with the same seed the noise and
/// masks are identical, so the difference is exactly the clipped contributions' difference.
/// Against a record whose gradient is zero (x = 0, the same as an absent client) the move is C.
#[test]
fn one_client_moves_the_sum_by_at_most_c() {
    let (n, d, c) = (30usize, 8usize, 0.5);
    let base = logistic_records(n, d, 3);
    let with_row0 = |row: Vec<f64>, y: f64| {
        let mut x = Vec::new();
        let mut labels = Vec::new();
        for i in 0..n {
            if i == 0 {
                x.extend(&row);
                labels.push(y);
            } else {
                x.extend(base.x(i));
                labels.push(base.y(i));
            }
        }
        Records::new(x, d, labels).unwrap()
    };
    let huge = with_row0(
        base.x(0).iter().map(|v| v * 1e6 + 1e5).collect(),
        1.0 - base.y(0),
    );
    let zero = with_row0(vec![0.0; d], base.y(0));
    let config = private_config(1.0, 1e9, ClientSampling::Poisson { rate: 1.0 }, 2);
    let release = |records: &Records| {
        let mut t = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(5)).unwrap();
        // Move θ off zero first so gradients are not all symmetric.
        t.step(&base, &[]).unwrap();
        t.step(records, &[]).unwrap().released_sum
    };
    let (a, b, o) = (release(&base), release(&huge), release(&zero));
    let dist = |u: &[f64], v: &[f64]| {
        u.iter()
            .zip(v)
            .map(|(x, y)| (x - y).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let tol = 1e-9;
    assert!(dist(&b, &o) <= c + tol, "{}", dist(&b, &o));
    assert!(
        dist(&b, &o) >= c - 1e-6,
        "clipping not active: {}",
        dist(&b, &o)
    );
    assert!(dist(&a, &b) <= 2.0 * c + tol);
    assert!(dist(&a, &o) <= c + tol);
}

/// A step past the budget is refused before anything is released and changes nothing.
#[test]
fn accountant_refuses_and_changes_nothing() {
    let (n, d) = (20usize, 4usize);
    let records = logistic_records(n, d, 11);
    let mut config = private_config(3.0, 2.0, ClientSampling::Poisson { rate: 0.5 }, 1);
    config.optimizer = Optimizer::adam(0.1);
    let mut trainer = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(1)).unwrap();
    let mut done = 0;
    let refused = loop {
        let before = (
            trainer.params().to_vec(),
            trainer.spent(),
            trainer.iteration(),
        );
        match trainer.step(&records, &[]) {
            Ok(r) => {
                assert!(r.spent.unwrap().epsilon <= 2.0);
                done += 1;
            }
            Err(e) => break (e, before),
        }
        assert!(done < 1000);
    };
    let (err, before) = refused;
    assert!(matches!(err, Error::BudgetExceeded { .. }), "{err}");
    assert!(done >= 1, "{err}");
    assert_eq!(
        before,
        (
            trainer.params().to_vec(),
            trainer.spent(),
            trainer.iteration()
        )
    );
    // Refused again, still nothing changes; fit() stops at the same place.
    assert!(trainer.step(&records, &[]).is_err());
    assert_eq!(
        before,
        (
            trainer.params().to_vec(),
            trainer.spent(),
            trainer.iteration()
        )
    );
    assert_eq!(trainer.fit(&records, 10).unwrap(), 0);
    // Too many dropouts, duplicates, wrong shapes: refused, nothing changes.
    let mut fresh = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(1)).unwrap();
    let snapshot = (fresh.params().to_vec(), fresh.spent(), fresh.iteration());
    assert!(matches!(
        fresh.step(&records, &[1, 2]),
        Err(Error::TooManyDropped { .. })
    ));
    assert!(fresh.step(&records, &[1, 1]).is_err());
    assert!(fresh.step(&records, &[n]).is_err());
    assert!(fresh.step(&logistic_records(n - 1, d, 1), &[]).is_err());
    assert!(fresh.step(&logistic_records(n, d + 1, 1), &[]).is_err());
    let bad_labels = Records::new(vec![0.1; n * d], d, vec![0.5; n]).unwrap();
    assert!(fresh.step(&bad_labels, &[]).is_err());
    assert_eq!(
        snapshot,
        (fresh.params().to_vec(), fresh.spent(), fresh.iteration())
    );
    // Configurations that cannot be private are refused.
    assert!(
        Trainer::new(
            private_config(1.0, 1.0, ClientSampling::Poisson { rate: 0.5 }, 19),
            n,
            d,
            RngSource::Os
        )
        .is_err()
    );
    assert!(
        Trainer::new(
            private_config(0.0, 1.0, ClientSampling::Poisson { rate: 0.5 }, 1),
            n,
            d,
            RngSource::Os
        )
        .is_err()
    );
    assert!(
        Trainer::new(
            private_config(1.0, 1.0, ClientSampling::Poisson { rate: 0.0 }, 1),
            n,
            d,
            RngSource::Os
        )
        .is_err()
    );
    assert!(
        Trainer::new(
            private_config(1.0, 1.0, ClientSampling::FixedSize { batch: n + 1 }, 1),
            n,
            d,
            RngSource::Os
        )
        .is_err()
    );
    // A dimension past what a DCA round carries is an error, not an overflow or an abort.
    for huge in [fixedpoint_shares::MAX_DIM / 2 + 1, usize::MAX] {
        let vi = TrainerConfig {
            model: Model::LinearRegressionVi {
                noise_precision: 1.0,
                prior_precision: 1.0,
            },
            ..private_config(1.0, 1.0, ClientSampling::Poisson { rate: 0.5 }, 1)
        };
        assert!(matches!(
            Trainer::new(vi, n, huge, RngSource::Os),
            Err(Error::InvalidParameter { name: "dim", .. })
        ));
    }
}

/// Dropouts up to T do not change what is charged (the noise was sized for N − T − 1 honest
/// shares), so a run calibrated for (ε, δ) keeps that claim with T clients missing from every
/// round; the realised noise stays ≥ σ_total.
#[test]
fn dropouts_up_to_t_keep_the_claimed_epsilon() {
    let (n, d, t, iters) = (50usize, 6usize, 4usize, 30u64);
    let records = logistic_records(n, d, 21);
    let target = PrivacyLoss::new(1.0, 1e-5).unwrap();
    let mut config = private_config(1.0, 1.0, ClientSampling::FixedSize { batch: 10 }, t);
    let z = calibrate_noise_multiplier(&config, n, d, target, iters).unwrap();
    config.privacy = Privacy::Private {
        budget: target,
        noise_multiplier: z,
    };
    let mut with_drops = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(2)).unwrap();
    let mut without = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(2)).unwrap();
    for it in 0..iters as usize {
        let dropped: Vec<usize> = (0..t).map(|k| (it * 7 + k * 11) % n).collect();
        let a = with_drops.step(&records, &dropped).unwrap();
        let b = without.step(&records, &[]).unwrap();
        assert_eq!(a.spent, b.spent);
        assert!(a.noise_sigma_released >= z * config.clip_norm);
    }
    let spent = with_drops.spent().unwrap();
    assert!(spent.epsilon <= 1.0 && spent.epsilon > 0.99, "{spent:?}");
    assert!(matches!(
        with_drops.step(&records, &[]),
        Err(Error::BudgetExceeded { .. })
    ));
}

/// ε = ∞ (no noise, no clipping, every client every round): full-batch gradient descent through
/// DCA converges to the non-private optimum computed independently — PLR at ε = ∞ (plr-stacking's
/// Newton solver on the same objective (1/n)Σ ln(1 + e^{−y wᵀx}) + (λ/2)‖w‖²).
#[test]
fn non_private_logistic_regression_reaches_the_optimum() {
    let (n, d, l2) = (200usize, 5usize, 0.01);
    let records = logistic_records(n, d, 13);
    let config = TrainerConfig {
        model: Model::Logistic {
            l2,
            intercept: false,
        },
        sampling: ClientSampling::Poisson { rate: 1.0 },
        clip_norm: 1.0,
        privacy: Privacy::NonPrivate,
        optimizer: Optimizer::Sgd { learning_rate: 4.0 },
        n_nodes: 2,
        max_dropped: 0,
    };
    let mut trainer = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(4)).unwrap();
    assert_eq!(trainer.fit(&records, 3000).unwrap(), 3000);
    assert!(trainer.spent().is_none());
    let x: Vec<f64> = (0..n).flat_map(|i| records.x(i).to_vec()).collect();
    let data = plr_stacking::Dataset::from_rows(&x, d, records.labels()).unwrap();
    let plr = plr_stacking::fit_plr(
        &data,
        &plr_stacking::PlrConfig {
            intercept: false,
            ..plr_stacking::PlrConfig::new(f64::INFINITY, l2)
        },
        &plr_stacking::RngSource::InsecureFixedSeed(0),
    )
    .unwrap();
    for (a, b) in trainer.params().iter().zip(plr.model.weights()) {
        assert!(
            (a - b).abs() < 1e-6,
            "{:?} vs {:?}",
            trainer.params(),
            plr.model.weights()
        );
    }
}

/// DP-VI for BLR at ε = ∞ reaches the exact mean-field optimum, known in closed form for a
/// Gaussian likelihood: m = Λ⁻¹λXᵀy (the exact posterior mean) and s_j² = 1/Λ_jj with
/// Λ = λ₀I + λXᵀX.
#[test]
fn non_private_vi_reaches_the_mean_field_optimum() {
    let (n, d) = (100usize, 3usize);
    let (lambda, lambda0) = (1.0, 1.0);
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut x = Vec::new();
    let mut y = Vec::new();
    for _ in 0..n {
        let row: Vec<f64> = (0..d).map(|_| 2.0 * unit() - 1.0).collect();
        y.push(0.5 * row[0] - 1.0 * row[1] + 0.3 * row[2] + 0.2 * (2.0 * unit() - 1.0));
        x.extend(row);
    }
    let records = Records::new(x.clone(), d, y.clone()).unwrap();
    let config = TrainerConfig {
        model: Model::LinearRegressionVi {
            noise_precision: lambda,
            prior_precision: lambda0,
        },
        sampling: ClientSampling::Poisson { rate: 1.0 },
        clip_norm: 1.0,
        privacy: Privacy::NonPrivate,
        optimizer: Optimizer::Sgd { learning_rate: 1.5 },
        n_nodes: 2,
        max_dropped: 0,
    };
    let mut trainer = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(4)).unwrap();
    trainer.fit(&records, 1500).unwrap();
    // Λ and λXᵀy by hand, Λ⁻¹ by Gauss–Jordan (3 × 3).
    let mut a = [[0.0f64; 4]; 3];
    for i in 0..n {
        let r = &x[i * d..(i + 1) * d];
        for j in 0..d {
            for k in 0..d {
                a[j][k] += lambda * r[j] * r[k];
            }
            a[j][3] += lambda * r[j] * y[i];
        }
    }
    for (j, row) in a.iter_mut().enumerate() {
        row[j] += lambda0;
    }
    let diag: Vec<f64> = (0..d).map(|j| a[j][j]).collect();
    for p in 0..d {
        let piv = a[p][p];
        a[p].iter_mut().for_each(|v| *v /= piv);
        let pivot_row = a[p];
        for (r, row) in a.iter_mut().enumerate() {
            if r != p {
                let f = row[p];
                row.iter_mut()
                    .zip(&pivot_row)
                    .for_each(|(v, pv)| *v -= f * pv);
            }
        }
    }
    let params = trainer.params();
    for j in 0..d {
        assert!(
            (params[j] - a[j][3]).abs() < 1e-6,
            "m[{j}] {} vs {}",
            params[j],
            a[j][3]
        );
        let s2 = (2.0 * params[d + j]).exp();
        assert!(
            (s2 * diag[j] - 1.0).abs() < 1e-6,
            "s²[{j}] {s2} vs {}",
            1.0 / diag[j]
        );
    }
    let pred = vi_predict_mean(params, &x[..d]).unwrap();
    assert!((pred[0] - (0..d).map(|j| params[j] * x[j]).sum::<f64>()).abs() < 1e-12);
}

/// Private DP-SGD with Adam still learns: at ε = 2 (calibrated for 100 iterations, q = 0.1)
/// the training objective drops by more than 0.05 nats and the budget holds (a smoke test of
/// the whole path, not a utility claim).
#[test]
fn private_adam_training_improves_the_objective() {
    let (n, d) = (2000usize, 4usize);
    let records = logistic_records(n, d, 17);
    let mut config = private_config(1.0, 2.0, ClientSampling::Poisson { rate: 0.1 }, 5);
    config.optimizer = Optimizer::adam(0.05);
    config.clip_norm = 1.0;
    let z = calibrate_noise_multiplier(&config, n, d, PrivacyLoss::new(2.0, 1e-5).unwrap(), 100)
        .unwrap();
    config.privacy = Privacy::Private {
        budget: PrivacyLoss::new(2.0, 1e-5).unwrap(),
        noise_multiplier: z,
    };
    let mut trainer = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(6)).unwrap();
    let start = config.model.objective(trainer.params(), &records);
    assert_eq!(trainer.fit(&records, 100).unwrap(), 100);
    let end = config.model.objective(trainer.params(), &records);
    assert!(end < start - 0.05, "{start} -> {end}");
    assert!(trainer.spent().unwrap().epsilon <= 2.0);
}

/// Each client's Poisson coin and the fixed-size batch have the right distribution (binomial
/// counts within 5.33 standard deviations: two-sided α ≈ 1e-7).
#[test]
fn samplers_have_the_stated_distribution() {
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    let (draws, rate) = (1_000_000usize, 0.3);
    let hits = (0..draws).filter(|_| poisson_coin(&mut rng, rate)).count() as f64;
    let sd = (draws as f64 * rate * (1.0 - rate)).sqrt();
    assert!((hits - draws as f64 * rate).abs() < 5.33 * sd, "{hits}");
    let (n, m, reps) = (37usize, 9usize, 20_000usize);
    let mut counts = vec![0usize; n];
    for _ in 0..reps {
        let mask = fixed_size_batch(&mut rng, n, m);
        assert_eq!(mask.iter().filter(|&&b| b).count(), m);
        mask.iter()
            .zip(&mut counts)
            .for_each(|(&b, c)| *c += usize::from(b));
    }
    let p = m as f64 / n as f64;
    let sd = (reps as f64 * p * (1.0 - p)).sqrt();
    // A union bound over 37 counts: 37·1e-7 < 1e-5; the threshold 5.33σ each keeps α small.
    for (i, &c) in counts.iter().enumerate() {
        assert!(
            (c as f64 - reps as f64 * p).abs() < 5.33 * sd,
            "client {i}: {c}"
        );
    }
}

#[test]
fn any_dropout_tolerance_is_an_error_not_an_overflow() {
    let config = private_config(1.0, 1.0, ClientSampling::Poisson { rate: 0.5 }, usize::MAX);
    let e = Trainer::new(config, 10, 2, RngSource::InsecureFixedSeed(1)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "max_dropped",
                ..
            }
        ),
        "{e}"
    );
}

/// Labels that depend on x only through an offset: x = k/40 for k = 1..24 (all > 0), y = +1
/// iff k > 12. Without intercept wᵀx has one sign for every row, so the model predicts one
/// class: accuracy 12/24 = 0.5 exactly. With it (θ = (w, b)), non-private DP-SGD puts the
/// boundary near 0.3.
#[test]
fn intercept_learns_an_offset_that_the_plain_model_cannot() {
    let x: Vec<f64> = (1..=24).map(|k| k as f64 / 40.0).collect();
    let y: Vec<f64> = (1..=24).map(|k| if k > 12 { 1.0 } else { -1.0 }).collect();
    let records = Records::new(x.clone(), 1, y.clone()).unwrap();
    let accuracy = |intercept: bool| {
        let config = TrainerConfig {
            model: Model::Logistic {
                l2: 1e-4,
                intercept,
            },
            sampling: ClientSampling::Poisson { rate: 1.0 },
            clip_norm: 2.0,
            privacy: Privacy::NonPrivate,
            optimizer: Optimizer::adam(0.1),
            n_nodes: 2,
            max_dropped: 0,
        };
        let mut trainer = Trainer::new(config, 24, 1, RngSource::InsecureFixedSeed(4)).unwrap();
        trainer.fit(&records, 1500).unwrap();
        let p = if intercept {
            logistic_intercept_predict_proba(trainer.params(), &x).unwrap()
        } else {
            logistic_predict_proba(trainer.params(), &x).unwrap()
        };
        let right = p
            .iter()
            .zip(&y)
            .filter(|(p, y)| (**p > 0.5) == (**y > 0.0))
            .count();
        right as f64 / 24.0
    };
    assert_eq!(accuracy(false), 0.5);
    let a = accuracy(true);
    assert!(a >= 0.95, "accuracy with intercept {a}");
}

/// A fixed-seed fit without public ranges, pinned to the exact f64 outputs recorded on main
/// before ranges existed: the path without ranges must stay bit for bit what it was.
#[test]
fn fit_without_ranges_is_unchanged() {
    let records = logistic_records(40, 3, 11);
    let mut private = private_config(1.5, 8.0, ClientSampling::Poisson { rate: 0.5 }, 1);
    private.model = Model::logistic(0.01);
    private.optimizer = Optimizer::adam(0.05);
    let mut trainer = Trainer::new(private, 40, 3, RngSource::InsecureFixedSeed(21)).unwrap();
    assert_eq!(trainer.fit(&records, 5).unwrap(), 5);
    let rows = [0.9, -2.0, 0.1, -0.3, 0.2, 0.05];
    let p = logistic_intercept_predict_proba(trainer.params(), &rows).unwrap();
    assert_eq!(
        trainer.params(),
        [
            0.008968241634620231,
            -0.23293749020461374,
            0.24719381900064386,
            0.07685615870224104
        ]
    );
    assert_eq!(p, [0.6400363548374375, 0.5099831428610009]);

    let mut plain = private;
    plain.privacy = Privacy::NonPrivate;
    plain.sampling = ClientSampling::FixedSize { batch: 10 };
    let mut trainer = Trainer::new(plain, 40, 3, RngSource::InsecureFixedSeed(22)).unwrap();
    assert_eq!(trainer.fit(&records, 5).unwrap(), 5);
    assert_eq!(
        trainer.params(),
        [
            0.22995169645719554,
            -0.2042717375494619,
            0.18134744154544383,
            0.046171285301473304
        ]
    );
}

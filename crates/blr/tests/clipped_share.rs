//! The pipeline's clipped-share round (`ProjectionConfig::clipped_share_budget`, `Fit::clipped`):
//! the released shares against counts taken by hand from the data and the fit's bounds, the
//! noise and the budget against values computed by hand.

use blr::data::{Table, centre_and_scale_to_range};
use blr::ssp::RoundBudget;
use blr::{
    FitConfig, Mechanism, Prior, ProjectionConfig, fit, release_clipped_share_held,
    stats_round_budget,
};
use dp_noise::PrivacyLoss;
use dp_noise::accountant::Accountant;
use dp_noise::rng::RngSource;
use projection::holders::{Grouping, Holders};
use projection::release::{InProcess, ReleaseContext};
use projection::search::{Aggregate, OmegaGrid, SearchConfig};
use projection::{Aggregation, DcaSettings};

fn diabetes() -> (Vec<f64>, Vec<f64>, usize, usize) {
    let table = Table::parse_csv(include_str!("../../../examples/data/diabetes.csv")).unwrap();
    let (mut x, mut y, d, _) = table.split_target("target").unwrap();
    let n = table.rows;
    centre_and_scale_to_range(&mut x, n, d, 10.0).unwrap();
    centre_and_scale_to_range(&mut y, n, 1, 10.0).unwrap();
    (x, y, n, d)
}

fn config(aggregation: Aggregation, epsilon: f64, d: usize, clipped: f64) -> FitConfig {
    let grid = OmegaGrid::new(vec![0.3, 0.6, 1.0, 1.5]).unwrap();
    FitConfig {
        aggregation,
        mechanism: Mechanism::Gaussian,
        budget: PrivacyLoss {
            epsilon,
            delta: 1e-5,
        },
        assumed_x: vec![7.5; d],
        assumed_y: 7.5,
        projection: Some(ProjectionConfig {
            search: SearchConfig {
                grid_x: grid.clone(),
                grid_y: grid,
                repeats: 2,
                aggregate: Aggregate::Mean,
                seed: 0,
                aux_max_correlation: 0.0,
            },
            clipped_share_budget: clipped,
            ..ProjectionConfig::default()
        }),
        prior: Prior::default(),
        with_yy: false,
    }
}

/// The largest ρ with ρ + 2√(ρ ln(1/δ)) ≤ ε, solved by hand: √ρ = √(ε + L) − √L, L = ln(1/δ)
/// (the library shrinks it by one part in 10⁹, hence the 10⁻⁸ tolerances below).
fn rho_of(epsilon: f64, delta: f64) -> f64 {
    let l = (1.0 / delta).ln();
    ((epsilon + l).sqrt() - l.sqrt()).powi(2)
}

/// Shares of records whose |y| > B_y, and with some |x_j| > B_j, counted here.
fn shares_by_hand(x: &[f64], y: &[f64], d: usize, bounds_x: &[f64], bound_y: f64) -> (f64, f64) {
    let n = y.len() as f64;
    let clipped_y = y.iter().filter(|v| v.abs() > bound_y).count() as f64;
    let clipped_x = x
        .chunks(d)
        .filter(|row| row.iter().zip(bounds_x).any(|(v, b)| v.abs() > *b))
        .count() as f64;
    (clipped_y / n, clipped_x / n)
}

#[test]
fn the_released_shares_are_the_counted_ones_when_the_noise_is_small() {
    let (x, y, n, d) = diabetes();
    let dca = Aggregation::Distributed(DcaSettings {
        n_nodes: 3,
        max_dropped: 0,
        ..DcaSettings::default()
    });
    for aggregation in [Aggregation::Trusted, dca] {
        // ε = 10⁴ with 20% of it on the counts: count noise sd 1/√ρ_c ≈ 0.03 records.
        let cfg = config(aggregation, 1e4, d, 0.2);
        let f = fit(&x, &y, n, d, &cfg, RngSource::InsecureFixedSeed(5)).unwrap();
        let got = f
            .clipped
            .expect("a positive clipped_share_budget releases the shares");
        let (want_y, want_x) = shares_by_hand(&x, &y, d, &f.bounds_x, f.bound_y);
        // Some y are clipped and some are not, or the check would prove little (x: see below).
        assert!(
            want_y > 0.0 && want_y < 1.0 && want_x > 0.0,
            "{want_y} {want_x}"
        );
        let tolerance = 0.5 / n as f64; // half a record
        assert!(
            (got.y - want_y).abs() < tolerance,
            "{aggregation:?}: {got:?} vs {want_y}"
        );
        assert!(
            (got.x - want_x).abs() < tolerance,
            "{aggregation:?}: {got:?} vs {want_x}"
        );
    }
}

/// The x count at bounds where neither share is 0 or 1 (the pipeline's chosen bounds clip some
/// x of every diabetes record), through the round's function directly.
#[test]
fn the_x_count_is_records_with_some_clipped_coordinate() {
    let (x, y, n, d) = diabetes();
    let (bounds_x, bound_y) = (vec![6.0; d], 3.0);
    let (want_y, want_x) = shares_by_hand(&x, &y, d, &bounds_x, bound_y);
    assert!(
        want_x > 0.0 && want_x < 1.0 && want_y > 0.0 && want_y < 1.0,
        "{want_x} {want_y}"
    );
    let holders = Holders::Here {
        x: &x,
        y: &y,
        d,
        grouping: Grouping::OneRowEach,
    };
    let mut accountant = Accountant::new(PrivacyLoss {
        epsilon: 1e4,
        delta: 1e-5,
    })
    .unwrap();
    let ctx = ReleaseContext {
        aggregation: Aggregation::Trusted,
        round: 3,
        rng: RngSource::InsecureFixedSeed(3),
        accountant: &mut accountant,
    };
    let got = release_clipped_share_held(
        &holders,
        &bounds_x,
        bound_y,
        "",
        Mechanism::Gaussian,
        RoundBudget::Rho(1e3),
        ctx,
        &mut InProcess,
    )
    .unwrap();
    let tolerance = 0.5 / n as f64;
    assert!((got.x - want_x).abs() < tolerance, "{got:?} vs {want_x}");
    assert!((got.y - want_y).abs() < tolerance, "{got:?} vs {want_y}");
}

#[test]
fn the_counts_cost_their_share_of_the_budget_and_no_more() {
    let (x, y, n, d) = diabetes();
    let (epsilon, delta) = (1.0, 1e-5);
    let rho = rho_of(epsilon, delta);
    let cfg = config(Aggregation::Trusted, epsilon, d, 0.05);
    // The std round keeps its 10%, the counts take 5%, the statistics the other 85%.
    match stats_round_budget(&cfg).unwrap() {
        RoundBudget::Rho(r) => assert!((r - 0.85 * rho).abs() < 1e-8 * rho, "{r} vs {rho}"),
        other => panic!("{other:?}"),
    }
    let f = fit(&x, &y, n, d, &cfg, RngSource::InsecureFixedSeed(6)).unwrap();
    let got = f.clipped.unwrap();
    // Δ₂ = √2 (two indicators), σ = Δ₂/√(2ρ_c) = 1/√(0.05ρ) records, over n = 442 records.
    let share_sd = 1.0 / (0.05 * rho).sqrt() / n as f64;
    assert!(
        (got.share_sd - share_sd).abs() < 1e-8 * share_sd,
        "{} vs {share_sd}",
        got.share_sd
    );
    assert!((0.0..=1.0).contains(&got.y) && (0.0..=1.0).contains(&got.x));
    // The three rounds add up to the whole budget.
    assert!(
        (f.spent.epsilon - epsilon).abs() < 1e-6 && f.spent.delta <= delta,
        "{:?}",
        f.spent
    );
    // Without the round the fit releases no shares and the statistics get 90%.
    let without = config(Aggregation::Trusted, epsilon, d, 0.0);
    match stats_round_budget(&without).unwrap() {
        RoundBudget::Rho(r) => assert!((r - 0.9 * rho).abs() < 1e-8 * rho),
        other => panic!("{other:?}"),
    }
    let f = fit(&x, &y, n, d, &without, RngSource::InsecureFixedSeed(6)).unwrap();
    assert!(f.clipped.is_none());
}

#[test]
fn a_clipped_share_budget_outside_its_range_is_refused() {
    let (x, y, n, d) = diabetes();
    for bad in [-0.1, 0.9, 1.0, f64::NAN, f64::INFINITY] {
        let cfg = config(Aggregation::Trusted, 1.0, d, bad);
        let err = fit(&x, &y, n, d, &cfg, RngSource::InsecureFixedSeed(1)).unwrap_err();
        assert!(
            err.to_string().contains("clipped_share_budget"),
            "{bad}: {err}"
        );
    }
}

//! Public ranges in the stacked models: the low-level models read their columns mapped by the
//! columns' ranges, and predict from rows in the data's units; values by hand.

use super::*;
use crate::test_support::{synthetic, synthetic_dataset};
use crate::transfer::{TransferConfig, fit_pst_h, fit_source_models, fit_target_with_source};

fn range(lo: f64, hi: f64) -> FeatureRange {
    FeatureRange::new(lo, hi).unwrap()
}

/// Ranges with centres and half-widths that are powers of two, so that the hand map below is
/// exact: [0, 8] (4, 4), [−4, 0] (−2, 2), [0, 1] (0.5, 0.5), [2, 6] (4, 2).
fn ranges() -> Vec<FeatureRange> {
    vec![
        range(0.0, 8.0),
        range(-4.0, 0.0),
        range(0.0, 1.0),
        range(2.0, 6.0),
    ]
}

/// The map of `ranges()` written out by hand: clamp, subtract the centre, divide by the
/// half-width.
fn mapped_by_hand(x: &[f64]) -> Vec<f64> {
    let (lo, hi, centre, half) = (
        [0.0, -4.0, 0.0, 2.0],
        [8.0, 0.0, 1.0, 6.0],
        [4.0, -2.0, 0.5, 4.0],
        [4.0, 2.0, 0.5, 2.0],
    );
    x.chunks(4)
        .flat_map(|r| {
            (0..4).map(move |j| {
                let v = if r[j] < lo[j] {
                    lo[j]
                } else if r[j] > hi[j] {
                    hi[j]
                } else {
                    r[j]
                };
                (v - centre[j]) / half[j]
            })
        })
        .collect()
}

/// Synthetic rows moved into the data's own units: x ↦ 4 + 4x, −2 + 2x, 0.5 + x/2, 4 + 2x, so
/// that most values lie inside the ranges and some outside (clamped).
fn raw_rows(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let (x, y) = synthetic(n, 4, 1.5, seed);
    let raw = x
        .chunks(4)
        .flat_map(|r| {
            [
                4.0 + 4.0 * r[0],
                -2.0 + 2.0 * r[1],
                0.5 + 0.5 * r[2],
                4.0 + 2.0 * r[3],
            ]
        })
        .collect();
    (raw, y)
}

fn groups() -> FeatureGroups {
    FeatureGroups::new(vec![vec![2, 0], vec![1, 3]], vec![0.75, 0.25], 4).unwrap()
}

fn with_ranges(intercept: bool) -> StackingConfig {
    StackingConfig {
        intercept,
        ranges: Some(ranges()),
        ..StackingConfig::new(1.0, 0.1)
    }
}

/// Bits of every weight and intercept of a stack, low level first.
fn fingerprint(model: &StackedModel) -> Vec<u64> {
    let mut bits = Vec::new();
    let mut push = |m: &LogisticModel| {
        bits.extend(m.weights().iter().map(|w| w.to_bits()));
        bits.extend(m.intercept().map(f64::to_bits));
    };
    model.low_level().iter().for_each(|l| push(&l.model));
    push(model.high_level());
    bits
}

/// Without ranges the fits are what they were before ranges existed: the bits below were
/// printed by this test's fits built from main at 091db63, before the change.
#[test]
fn fits_without_ranges_are_bit_identical_to_before() {
    let data = synthetic_dataset(40, 4, 1.0, 8);
    let source = synthetic_dataset(60, 4, 1.0, 9);
    let groups = FeatureGroups::new(vec![vec![2, 0], vec![1, 3]], vec![0.7, 0.3], 4).unwrap();
    let rng = RngSource::InsecureFixedSeed(31);
    let before: [[&[u64]; 3]; 2] = [
        [
            &[
                13846501343643980869,
                13830806619800811862,
                4612826151244905722,
                4612537130348584612,
                4624022366732409455,
                4617151804460535946,
                13844824931267659540,
                4627348384973480424,
                4595291504140303702,
                13828235928212030648,
            ],
            &[
                13832574519220370932,
                13828402972084426290,
                4617057842245445749,
                4613486089630061264,
                13829980767911892704,
                4601877880857059662,
            ],
            &[
                4601660193870070612,
                13831171476713941562,
                13815767385584057337,
                13831897406989477135,
                13825893524986691530,
                13831644281632488416,
            ],
        ],
        [
            &[
                13848416210495109773,
                13832102825464568125,
                4613697861871749792,
                4612802340408845720,
                13839140468727908624,
                4624563032566550721,
                4618979010017249064,
                13844306806314514513,
                4627916962182046538,
                13845941904758136489,
                13821239367305367942,
                4600600017925965625,
                13820092298752810611,
            ],
            &[
                13836571914272112370,
                13829315463850338404,
                13821643421209836348,
                4618591921872975277,
                4614743669873757029,
                13828822395202089675,
                13834350286859491415,
                4604035675935585769,
                13820134503302606389,
            ],
            &[
                4604625436404937319,
                13829099438981048581,
                13819085258959025434,
                4578864551249722255,
                13832865138583437575,
                4592112488795359417,
                13829753587542317826,
                13832252670278565988,
                13827663556184604993,
            ],
        ],
    ];
    for (intercept, expect) in [false, true].into_iter().zip(before) {
        let config = StackingConfig {
            intercept,
            ..StackingConfig::new(1.0, 0.1)
        };
        let s = fit_pst_s(&data, 2, &config, &rng).unwrap();
        let f = fit_pst_f(&data, &groups, &config, &rng).unwrap();
        let transfer = TransferConfig {
            epsilon_source: 1.0,
            epsilon_target: 2.0,
            lambda_source: 0.1,
            lambda_target: 0.5,
            lambda_high: 0.1,
            high_fraction: 0.5,
            intercept,
            ranges: None,
        };
        let h = fit_pst_h(&source, &data, &groups, &transfer, &rng).unwrap();
        assert_eq!(
            fingerprint(&s.model),
            expect[0],
            "PST-S, intercept {intercept}"
        );
        assert_eq!(
            fingerprint(&f.model),
            expect[1],
            "PST-F, intercept {intercept}"
        );
        assert_eq!(
            fingerprint(&h.target.model),
            expect[2],
            "PST-H, intercept {intercept}"
        );
    }
}

/// Low-level model k reads the ranges of its own columns, in its group's order, and its
/// margin on a raw row is w·φ(x) + a with φ by hand. Row (6, −9, 0.5, 100): clamp and map →
/// (0.5, −1, 0, 1). Group 0 = columns (2, 0): (0, 0.5), norm 0.5 ≤ r_x = 0.75/√2 ≈ 0.530,
/// kept. Group 1 = columns (1, 3): (−1, 1), norm √2 > r_x = 0.25/√2, so ×(0.25/√2)/√2 = 1/8:
/// (−0.125, 0.125). Then m_k = (2σ(z_k) − 1)/√2 and p = σ(v·m + b).
#[test]
fn a_stack_predicts_a_raw_row_through_its_ranges_by_hand() {
    let (x, y) = raw_rows(200, 3);
    let data = Dataset::from_rows(&x, 4, &y).unwrap();
    let fit = fit_pst_f(
        &data,
        &groups(),
        &with_ranges(true),
        &RngSource::InsecureFixedSeed(5),
    )
    .unwrap();
    let low = fit.model.low_level();
    let all = ranges();
    assert_eq!(low[0].model.ranges().unwrap(), &[all[2], all[0]]);
    assert_eq!(low[1].model.ranges().unwrap(), &[all[1], all[3]]);
    assert_eq!(fit.model.high_level().ranges(), None);

    let row = [6.0, -9.0, 0.5, 100.0];
    let phi = [[0.0, 0.5], [-0.125, 0.125]];
    let margins: Vec<f64> = low
        .iter()
        .zip(phi)
        .map(|(l, p)| {
            let w = l.model.weights();
            w[0] * p[0] + w[1] * p[1] + l.model.intercept().unwrap()
        })
        .collect();
    for (l, z) in low.iter().zip(&margins) {
        let got = l
            .model
            .decision_function(&[row[l.features[0]], row[l.features[1]]]);
        assert!((got.unwrap()[0] - z).abs() < 1e-15, "{z}");
    }
    let scale = 0.5f64.sqrt();
    let meta: Vec<f64> = margins
        .iter()
        .map(|z| (2.0 / (1.0 + (-z).exp()) - 1.0) * scale)
        .collect();
    let high = fit.model.high_level();
    let v = high.weights();
    let z = v[0] * meta[0] + v[1] * meta[1] + high.intercept().unwrap();
    let p = 1.0 / (1.0 + (-z).exp());
    let got = fit.model.predict_proba(&row).unwrap()[0];
    assert!((got - p).abs() < 1e-14, "{got} vs {p}");
    let got_meta = fit.model.meta_features(&row).unwrap();
    for (a, b) in got_meta.iter().zip(&meta) {
        assert!((a - b).abs() < 1e-15);
    }
}

/// A fit with ranges on rows in the data's units is the fit without ranges on the same rows
/// mapped by hand (the map is a per-record map before everything else), and its predictions
/// on raw rows are the other's on mapped rows — for PST-S, PST-F and PST-H.
#[test]
fn ranges_are_the_fit_on_rows_mapped_by_hand() {
    let (x, y) = raw_rows(240, 11);
    let (xs, ys) = raw_rows(300, 12);
    let raw = Dataset::from_rows(&x, 4, &y).unwrap();
    let mapped = Dataset::from_rows(&mapped_by_hand(&x), 4, &y).unwrap();
    let raw_source = Dataset::from_rows(&xs, 4, &ys).unwrap();
    let mapped_source = Dataset::from_rows(&mapped_by_hand(&xs), 4, &ys).unwrap();
    let test = [
        6.0, -9.0, 0.5, 100.0, 1.0, -1.0, 0.25, 3.0, -50.0, 7.0, 0.9, 5.0,
    ];
    let rng = RngSource::InsecureFixedSeed(17);
    // The no-ranges fit of a model with intercept maps rows by the same map_row (without
    // ranges); without intercept it takes another, equal-in-exact-arithmetic path.
    for intercept in [true, false] {
        let plain = StackingConfig {
            intercept,
            ..StackingConfig::new(2.0, 0.05)
        };
        let ranged = StackingConfig {
            ranges: Some(ranges()),
            ..plain.clone()
        };
        let transfer = |ranges| TransferConfig {
            epsilon_source: 1.0,
            epsilon_target: 2.0,
            lambda_source: 0.05,
            lambda_target: 0.5,
            lambda_high: 0.05,
            high_fraction: 0.5,
            intercept,
            ranges,
        };
        let pairs = [
            (
                fit_pst_s(&raw, 3, &ranged, &rng).unwrap().model,
                fit_pst_s(&mapped, 3, &plain, &rng).unwrap().model,
            ),
            (
                fit_pst_f(&raw, &groups(), &ranged, &rng).unwrap().model,
                fit_pst_f(&mapped, &groups(), &plain, &rng).unwrap().model,
            ),
            (
                fit_pst_h(
                    &raw_source,
                    &raw,
                    &groups(),
                    &transfer(Some(ranges())),
                    &rng,
                )
                .unwrap()
                .target
                .model,
                fit_pst_h(&mapped_source, &mapped, &groups(), &transfer(None), &rng)
                    .unwrap()
                    .target
                    .model,
            ),
        ];
        for (which, (with, without)) in pairs.iter().enumerate() {
            let (a, b) = (fingerprint(with), fingerprint(without));
            let tolerance = if intercept { 0.0 } else { 1e-9 };
            for (u, v) in a.iter().zip(&b) {
                let (u, v) = (f64::from_bits(*u), f64::from_bits(*v));
                assert!(
                    (u - v).abs() <= tolerance * (1.0 + v.abs()),
                    "model {which}, intercept {intercept}: {u} vs {v}"
                );
            }
            let p = with.predict_proba(&test).unwrap();
            let q = without.predict_proba(&mapped_by_hand(&test)).unwrap();
            for (u, v) in p.iter().zip(&q) {
                assert!((u - v).abs() <= 1e-9, "model {which}: {u} vs {v}");
            }
        }
    }
}

#[test]
fn bad_ranges_are_refused_naming_their_column() {
    let data = synthetic_dataset(40, 4, 1.0, 8);
    let rng = RngSource::InsecureFixedSeed(1);
    let mut bad = ranges();
    bad[2] = FeatureRange { lo: 1.0, hi: 1.0 };
    let mut nan = ranges();
    nan[3] = FeatureRange {
        lo: 0.0,
        hi: f64::NAN,
    };
    for (r, column) in [(bad, 2), (nan, 3)] {
        let config = StackingConfig {
            ranges: Some(r),
            ..StackingConfig::new(1.0, 0.1)
        };
        for result in [
            fit_pst_s(&data, 2, &config, &rng),
            fit_pst_f(&data, &groups(), &config, &rng),
        ] {
            let error = result.unwrap_err();
            assert!(
                matches!(error, Error::BadRange { column: c, .. } if c == column),
                "{error}"
            );
            assert!(error.to_string().contains(&format!("column {column}")));
        }
    }
    let short = StackingConfig {
        ranges: Some(ranges()[..3].to_vec()),
        ..StackingConfig::new(1.0, 0.1)
    };
    assert!(matches!(
        fit_pst_f(&data, &groups(), &short, &rng),
        Err(Error::DimensionMismatch {
            expected: 4,
            got: 3,
            ..
        })
    ));
}

/// PST-H's anchors are read on the mapped scale: a source model fitted with other ranges (or
/// none) than the target's is refused; the same ranges are accepted.
#[test]
fn transfer_needs_source_models_on_the_targets_ranges() {
    let source = synthetic_dataset(80, 4, 1.0, 1);
    let target = synthetic_dataset(60, 4, 1.0, 2);
    let rng = RngSource::InsecureFixedSeed(2);
    let without = fit_source_models(&source, &groups(), 1.0, 0.1, true, &rng).unwrap();
    let result = fit_target_with_source(&target, &groups(), &without, &with_ranges(true), &rng);
    assert!(matches!(
        result,
        Err(Error::SourceRangesMismatch { group: 0 })
    ));
    let with = crate::transfer::fit_source_models_with_ranges(
        &source,
        &groups(),
        1.0,
        0.1,
        true,
        Some(&ranges()),
        &rng,
    )
    .unwrap();
    assert_eq!(with[1].ranges().unwrap(), &[ranges()[1], ranges()[3]]);
    let plain = StackingConfig::new(1.0, 0.1);
    assert!(matches!(
        fit_target_with_source(&target, &groups(), &with, &plain, &rng),
        Err(Error::SourceRangesMismatch { group: 0 })
    ));
    assert!(fit_target_with_source(&target, &groups(), &with, &with_ranges(true), &rng).is_ok());
}

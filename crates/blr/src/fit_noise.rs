//! The noise-aware posterior of a pipeline fit: the public distribution of the noise that
//! [`crate::fit`] put into the released statistics, for each way of adding it, so that
//! [`noise_aware_posterior`] can condition on it.
//!
//! * Trusted aggregator: one draw of the calibrated noise per entry
//!   ([`StatsNoise::of_release`]), exactly.
//! * DCA: each of the N clients adds σ/√(N − T − 1) (so that the N − T − 1 honest shares alone
//!   carry σ) and the pipeline's rounds have no dropouts, so the released entries carry
//!   σ·√(N/(N − T − 1)). The discrete Gaussian on the fixed-point grid is treated as continuous
//!   (its variance differs by a relative O(2^−2f)), and the few ulps by which the round may raise
//!   σ to cover the grid's rounding in its zCDP charge are ignored.
//! * Input perturbation: every client adds the full noise, so the sum carries N independent
//!   draws: Gaussian σ√N exactly; a sum of N Laplace draws is not Laplace, and is described by
//!   the Gaussian of the same variance (2Nb²) — exact in variance, and close in shape unless N is
//!   tiny (N = 1 keeps the exact Laplace).

use dp_noise::rng::RngSource;
use projection::release::Aggregation;

use crate::error::Result;
use crate::latent::LatentPrior;
use crate::noise_aware::{
    EntryNoise, NoiseAwareOptions, NoiseAwarePosterior, StatsNoise, noise_aware_posterior,
};
use crate::pipeline::{Fit, FitConfig, stats_round_budget};

impl Fit {
    /// The public distribution of the noise in [`Fit::stats`], for the `config` this fit was
    /// made with (see the module docs for each aggregation).
    ///
    /// # Errors
    /// As [`stats_round_budget`] and [`StatsNoise::of_release`] for an invalid `config`.
    pub fn stats_noise(&self, config: &FitConfig) -> Result<StatsNoise> {
        released_stats_noise(config, &self.bounds_x, self.bound_y, self.stats.n)
    }

    /// The noise-aware posterior of β given this fit's released statistics (module docs of
    /// [`crate::noise_aware`]), with `draws` draws of the latent Σxxᵀ inside the box of the
    /// fit's clipping bounds, from `rng` (post-processing: any stream will do; a fixed seed
    /// makes it reproducible). `config` must be the one the fit was made with.
    ///
    /// # Errors
    /// As [`Fit::stats_noise`] and [`noise_aware_posterior`] (e.g. `draws` = 0).
    pub fn noise_aware_posterior(
        &self,
        config: &FitConfig,
        draws: usize,
        rng: &RngSource,
    ) -> Result<NoiseAwarePosterior> {
        noise_aware_posterior(
            &self.stats,
            self.stats_noise(config)?,
            config.prior,
            NoiseAwareOptions {
                draws,
                bounds_x: Some(&self.bounds_x),
                latent: LatentPrior::default(),
                adaptive: NoiseAwareOptions::default().adaptive,
            },
            rng,
        )
    }
}

/// The public distribution of the noise that a fit made with `config` puts into the statistics
/// of `n` records released at bounds (`bounds_x`, `bound_y`) (module docs).
pub(crate) fn released_stats_noise(
    config: &FitConfig,
    bounds_x: &[f64],
    bound_y: f64,
    n: usize,
) -> Result<StatsNoise> {
    let planned = StatsNoise::of_release(
        bounds_x,
        bound_y,
        config.with_yy,
        config.mechanism,
        stats_round_budget(config)?,
    )?;
    let records = n as f64;
    Ok(match config.aggregation {
        Aggregation::Trusted => planned,
        Aggregation::Distributed(dca) => {
            // N − T − 1 ≥ 1 is checked before the round runs; saturate rather than divide by 0.
            let honest = n.saturating_sub(dca.max_dropped + 1).max(1) as f64;
            let factor = (records / honest).sqrt();
            StatsNoise {
                xx: scaled(planned.xx, factor),
                xy: scaled(planned.xy, factor),
            }
        }
        Aggregation::InputPerturbation if n == 1 => planned,
        Aggregation::InputPerturbation => StatsNoise {
            xx: summed(planned.xx, records),
            xy: summed(planned.xy, records),
        },
    })
}

/// The same distribution with its standard deviation multiplied by `factor`.
fn scaled(noise: EntryNoise, factor: f64) -> EntryNoise {
    match noise {
        EntryNoise::Gaussian { sd } => EntryNoise::Gaussian { sd: sd * factor },
        EntryNoise::Laplace { scale } => EntryNoise::Laplace {
            scale: scale * factor,
        },
    }
}

/// The sum of `n` independent draws of `noise`: Gaussian with n times the variance.
fn summed(noise: EntryNoise, n: f64) -> EntryNoise {
    match noise {
        EntryNoise::Gaussian { sd } => EntryNoise::Gaussian { sd: sd * n.sqrt() },
        EntryNoise::Laplace { scale } => EntryNoise::Gaussian {
            sd: scale * (2.0 * n).sqrt(),
        },
    }
}

#[cfg(test)]
mod tests {
    use dp_noise::PrivacyLoss;
    use dp_noise::accountant::Accountant;
    use projection::release::{DcaSettings, ReleaseContext, release_sum};

    use crate::pipeline::fit;
    use crate::ssp::{Mechanism, stats_noise};
    use crate::stats::packed_len;

    use super::*;

    fn data(n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = (0..n * d)
            .map(|i| ((i * 37 % 101) as f64 / 50.0) - 1.0)
            .collect();
        let y = x.chunks(d).map(|r| r[0] - 0.5 * r[1]).collect();
        (x, y)
    }

    fn config(aggregation: Aggregation, mechanism: Mechanism) -> FitConfig {
        FitConfig {
            aggregation,
            mechanism,
            budget: PrivacyLoss {
                epsilon: 1.0,
                delta: 1e-5,
            },
            assumed_x: vec![1.0, 1.0],
            assumed_y: 2.0,
            projection: None,
            prior: crate::posterior::Prior::default(),
            with_yy: false,
        }
    }

    /// The noise the release layer itself reports for the same round (independent of this
    /// module's arithmetic): σ of the released sum per entry.
    fn reported_sd(fit: &Fit, config: &FitConfig, n: usize) -> (f64, f64) {
        let d = fit.bounds_x.len();
        let noise = stats_noise(
            &fit.bounds_x,
            fit.bound_y,
            false,
            config.mechanism,
            stats_round_budget(config).unwrap(),
        )
        .unwrap();
        let dim = packed_len(d) + d;
        let mut accountant = Accountant::new(PrivacyLoss {
            epsilon: 1e9,
            delta: 0.5,
        })
        .unwrap();
        let released = release_sum(
            &vec![0.0; n * dim],
            n,
            dim,
            10.0,
            &noise,
            ReleaseContext {
                aggregation: config.aggregation,
                round: 2,
                rng: RngSource::InsecureFixedSeed(1),
                accountant: &mut accountant,
            },
        )
        .unwrap();
        (released.noise_sd[0], released.noise_sd[dim - 1])
    }

    fn sd(noise: EntryNoise) -> f64 {
        match noise {
            EntryNoise::Gaussian { sd } => sd,
            EntryNoise::Laplace { scale } => scale * std::f64::consts::SQRT_2,
        }
    }

    #[test]
    fn described_noise_matches_what_the_release_layer_adds() {
        let (n, d) = (60, 2);
        let (x, y) = data(n, d);
        let dca = Aggregation::Distributed(DcaSettings {
            n_nodes: 3,
            max_dropped: 9,
            ..DcaSettings::default()
        });
        let cases = [
            (Aggregation::Trusted, Mechanism::Gaussian),
            (dca, Mechanism::Gaussian),
            (Aggregation::InputPerturbation, Mechanism::Gaussian),
            (
                Aggregation::InputPerturbation,
                Mechanism::Laplace {
                    split: [0.4, 0.4, 0.2],
                },
            ),
        ];
        for (aggregation, mechanism) in cases {
            let config = config(aggregation, mechanism);
            let fitted = fit(&x, &y, n, d, &config, RngSource::InsecureFixedSeed(3)).unwrap();
            let described = fitted.stats_noise(&config).unwrap();
            let (xx, xy) = reported_sd(&fitted, &config, n);
            // DCA rounds on its grid and may raise σ by a few ulps; 1e-6 relative is far
            // tighter than any effect on the posterior.
            for (got, want) in [(sd(described.xx), xx), (sd(described.xy), xy)] {
                assert!(
                    (got / want - 1.0).abs() < 1e-6,
                    "{aggregation:?} {mechanism:?}: described sd {got}, released sd {want}"
                );
            }
        }
    }

    #[test]
    fn dca_noise_is_wider_than_trusted_by_the_honest_fraction() {
        // Hand-computed: N = 60, T = 9 → σ·sqrt(60/50).
        let (n, d) = (60, 2);
        let (x, y) = data(n, d);
        let trusted = config(Aggregation::Trusted, Mechanism::Gaussian);
        let dca = config(
            Aggregation::Distributed(DcaSettings {
                n_nodes: 3,
                max_dropped: 9,
                ..DcaSettings::default()
            }),
            Mechanism::Gaussian,
        );
        let a = fit(&x, &y, n, d, &trusted, RngSource::InsecureFixedSeed(4)).unwrap();
        let b = fit(&x, &y, n, d, &dca, RngSource::InsecureFixedSeed(4)).unwrap();
        let ratio = sd(b.stats_noise(&dca).unwrap().xx) / sd(a.stats_noise(&trusted).unwrap().xx);
        assert!((ratio - 1.2f64.sqrt()).abs() < 1e-12, "{ratio}");
    }

    #[test]
    fn noise_aware_posterior_of_a_fit_is_wider_than_the_naive_one() {
        let (n, d) = (200, 2);
        let (x, y) = data(n, d);
        let config = config(Aggregation::Trusted, Mechanism::Gaussian);
        let fitted = fit(&x, &y, n, d, &config, RngSource::InsecureFixedSeed(5)).unwrap();
        let aware = fitted
            .noise_aware_posterior(&config, 300, &RngSource::InsecureFixedSeed(6))
            .unwrap();
        let naive = crate::noise_aware::naive_coefficients(&fitted.posterior, 0.9).unwrap();
        assert_eq!(naive.len(), d);
        for (j, naive) in naive.iter().enumerate() {
            assert!(
                aware.sd[j] > naive.sd,
                "coefficient {j}: noise-aware sd {} vs naive {}",
                aware.sd[j],
                naive.sd
            );
        }
        assert!(
            fitted
                .noise_aware_posterior(&config, 0, &RngSource::InsecureFixedSeed(6))
                .is_err()
        );
    }
}

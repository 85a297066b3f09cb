//! One client's contribution to an iteration when it holds many records (a hospital as one DCA
//! client): the sum over its records of each record's clipped gradient, each record in the
//! batch by its own Poisson coin. Sensitivity stays per record (adding or removing one record
//! moves the sum by at most C), so the round's noise is the same as with one record per
//! client; only the fixed-point grid must hold `max_rows · C` per coordinate.
//!
//! The trainer computes its clients' rows with this accumulator and a participant process
//! computes its own with it, chunk by chunk, so that both add the same terms in the same order
//! and a fixed seed reproduces the in-process release bit for bit.

use dp_noise::rng::{RngSource, SecretRng};

use crate::clip::clip_to_norm;
use crate::model::Model;
use crate::sampling::poisson_coin;
use crate::{Error, Result};

/// The two streams of iteration `iteration` under `rng`: the round's (client i seals its
/// shares and draws its noise from `.derive(i)`) and the sampling's (client i flips its
/// records' coins from `.derive(i)`, one coin per record in row order). The trainer and a
/// remote participant both derive them here.
pub fn iteration_rngs(rng: &RngSource, iteration: u64) -> (RngSource, RngSource) {
    (
        rng.derive(iteration.wrapping_mul(2)),
        rng.derive(iteration.wrapping_mul(2).wrapping_add(1)),
    )
}

/// Which of a client's records are in the batch.
enum Coins {
    /// Each by its own coin with probability `rate`, from the client's sampling stream.
    Poisson { rate: f64, rng: Box<SecretRng> },
    /// Every record (a non-private run, or a batch mask applied by the caller).
    All,
}

/// Σ over a client's sampled records of clip(∇ℓ(θ; x, y), C), fed in chunks of rows.
pub struct ClientGradient {
    model: Model,
    params: Vec<f64>,
    dim: usize,
    clip: Option<f64>,
    coins: Coins,
    sum: Vec<f64>,
    scratch: Vec<f64>,
    rows: usize,
}

impl ClientGradient {
    /// An empty sum at θ = `params` for records of `dim` features; records sampled with
    /// probability `rate` from `sampling` (the client's stream of [`iteration_rngs`]); each
    /// gradient clipped to ℓ2 norm `clip_norm` (`None`: not clipped, non-private only).
    ///
    /// # Errors
    /// θ of the wrong length or not finite, a rate outside (0, 1], C not positive, or an OS
    /// randomness failure.
    pub fn poisson(
        model: Model,
        params: &[f64],
        dim: usize,
        clip_norm: Option<f64>,
        rate: f64,
        sampling: RngSource,
    ) -> Result<Self> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(Error::InvalidParameter {
                name: "sampling rate",
                value: rate,
                requirement: "in (0, 1]",
            });
        }
        let mut sum = Self::all(model, params, dim, clip_norm)?;
        sum.coins = Coins::Poisson {
            rate,
            rng: Box::new(sampling.try_rng()?),
        };
        Ok(sum)
    }

    /// As [`ClientGradient::poisson`] with every record in the batch.
    ///
    /// # Errors
    /// As [`ClientGradient::poisson`].
    pub fn all(model: Model, params: &[f64], dim: usize, clip_norm: Option<f64>) -> Result<Self> {
        model.validate()?;
        let n_params = model.n_params(dim);
        if dim == 0 || params.len() != n_params {
            return Err(Error::LengthMismatch {
                what: "model parameters",
                expected: n_params,
                actual: params.len(),
            });
        }
        if let Some(index) = params.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "model parameters",
                index,
            });
        }
        if let Some(c) = clip_norm {
            crate::error::positive_finite("clip_norm", c)?;
        }
        Ok(ClientGradient {
            model,
            params: params.to_vec(),
            dim,
            clip: clip_norm,
            coins: Coins::All,
            sum: vec![0.0; n_params],
            scratch: vec![0.0; n_params],
            rows: 0,
        })
    }

    /// Adds the next rows: `x` row-major (rows × dim), `y` one label per row (logistic: the
    /// sign is the class). Every record draws its coin, in the batch or not, so the coins of
    /// later records do not depend on how the rows are chunked.
    ///
    /// # Errors
    /// Lengths that disagree, a value that is not finite.
    pub fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        if x.len() != y.len().saturating_mul(self.dim) {
            return Err(Error::LengthMismatch {
                what: "features (rows * dim)",
                expected: y.len().saturating_mul(self.dim),
                actual: x.len(),
            });
        }
        if let Some(index) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "features",
                index: self.rows * self.dim + index,
            });
        }
        if let Some(index) = y.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "labels",
                index: self.rows + index,
            });
        }
        for (row, &label) in x.chunks_exact(self.dim).zip(y) {
            self.push_one(row, label, true);
        }
        Ok(())
    }

    /// One record that the caller already checked; `in_batch` is the caller's own batch
    /// decision (ANDed with this sum's coin).
    pub(crate) fn push_one(&mut self, x: &[f64], y: f64, in_batch: bool) {
        self.rows += 1;
        let coin = match &mut self.coins {
            Coins::Poisson { rate, rng } => poisson_coin(rng.as_mut(), *rate),
            Coins::All => true,
        };
        if !(coin && in_batch) {
            return;
        }
        self.model
            .record_gradient(&self.params, x, y, &mut self.scratch);
        if let Some(c) = self.clip {
            clip_to_norm(&mut self.scratch, c);
        }
        for (s, g) in self.sum.iter_mut().zip(&self.scratch) {
            *s += g;
        }
    }

    /// Records pushed so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The sum (length `model.n_params(dim)`).
    pub fn finish(self) -> Vec<f64> {
        self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientSampling, Optimizer, Privacy, Records, Trainer, TrainerConfig};

    fn rows() -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = (0..40).map(|i| ((i * 7 % 11) as f64 - 5.0) / 2.0).collect();
        let y: Vec<f64> = (0..20)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        (x, y)
    }

    /// By hand: coin k from the client's stream, logistic gradient −y·σ(−y wᵀx)·x, scaled
    /// down to norm C.
    fn by_hand(w: &[f64], x: &[f64], y: &[f64], c: f64, rate: f64, rng: RngSource) -> Vec<f64> {
        let mut coins = rng.try_rng().unwrap();
        let mut sum = vec![0.0; 2];
        for (row, &label) in x.chunks(2).zip(y) {
            if !poisson_coin(&mut coins, rate) {
                continue;
            }
            let margin = label * (w[0] * row[0] + w[1] * row[1]);
            let coef = -label / (1.0 + margin.exp());
            let g = [coef * row[0], coef * row[1]];
            let norm = (g[0] * g[0] + g[1] * g[1]).sqrt();
            let scale = if norm > c { c / norm } else { 1.0 };
            sum[0] += g[0] * scale;
            sum[1] += g[1] * scale;
        }
        sum
    }

    #[test]
    fn the_sum_is_over_sampled_clipped_records_however_the_rows_are_chunked() {
        let (x, y) = rows();
        let w = [0.3, -0.2];
        let model = Model::Logistic {
            l2: 0.0,
            intercept: false,
        };
        let rng = RngSource::InsecureFixedSeed(11).derive(4);
        let mut whole = ClientGradient::poisson(model, &w, 2, Some(0.5), 0.4, rng).unwrap();
        whole.push_rows(&x, &y).unwrap();
        let mut chunked = ClientGradient::poisson(model, &w, 2, Some(0.5), 0.4, rng).unwrap();
        for (xs, ys) in x.chunks(6).zip(y.chunks(3)) {
            chunked.push_rows(xs, ys).unwrap();
        }
        assert_eq!(chunked.rows(), 20);
        let expected = by_hand(&w, &x, &y, 0.5, 0.4, rng);
        let whole = whole.finish();
        for (a, b) in whole.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-12, "{whole:?} vs {expected:?}");
        }
        assert_eq!(
            whole.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            chunked
                .finish()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        );
        // Some records were left out and some were in: the coins did something.
        let all = by_hand(&w, &x, &y, 0.5, 1.0, rng);
        assert_ne!(expected, all);
        assert_ne!(expected, vec![0.0, 0.0]);
    }

    #[test]
    fn bad_rows_rates_and_parameters_are_errors() {
        let model = Model::Logistic {
            l2: 0.0,
            intercept: false,
        };
        let rng = RngSource::InsecureFixedSeed(1);
        assert!(ClientGradient::poisson(model, &[0.0; 2], 2, Some(1.0), 0.0, rng).is_err());
        assert!(ClientGradient::poisson(model, &[0.0; 3], 2, Some(1.0), 0.5, rng).is_err());
        assert!(ClientGradient::all(model, &[f64::NAN, 0.0], 2, None).is_err());
        assert!(ClientGradient::all(model, &[0.0; 2], 2, Some(-1.0)).is_err());
        let mut sum = ClientGradient::all(model, &[0.0; 2], 2, Some(1.0)).unwrap();
        assert!(sum.push_rows(&[1.0; 3], &[1.0; 2]).is_err());
        assert!(sum.push_rows(&[1.0, f64::INFINITY], &[1.0]).is_err());
    }

    /// Three clients holding 2, 3 and 1 records, everyone in the batch, no clipping or noise
    /// (non-private): at w = 0 the release is Σ over all records of −y·x/2.
    #[test]
    fn a_trainer_with_many_records_per_client_releases_the_sum_over_all_records() {
        let (x, y) = rows();
        let (x, y) = (x[..12].to_vec(), y[..6].to_vec());
        let config = TrainerConfig {
            model: Model::Logistic {
                l2: 0.0,
                intercept: false,
            },
            sampling: ClientSampling::Poisson { rate: 1.0 },
            clip_norm: 1.0,
            privacy: Privacy::NonPrivate,
            optimizer: Optimizer::adam(0.1),
            n_nodes: 2,
            max_dropped: 0,
        };
        let seed = RngSource::InsecureFixedSeed(3);
        let mut trainer = Trainer::with_clients(config, vec![2, 3, 1], 3, 2, seed).unwrap();
        let records = Records::new(x.clone(), 2, y.clone()).unwrap();
        let step = trainer.step(&records, &[]).unwrap();
        let mut expected = [0.0; 2];
        for (row, &label) in x.chunks(2).zip(&y) {
            expected[0] -= label * row[0] / 2.0;
            expected[1] -= label * row[1] / 2.0;
        }
        for (a, b) in step.released_sum.iter().zip(expected) {
            assert!(
                (a - b).abs() < 1e-6,
                "{:?} vs {expected:?}",
                step.released_sum
            );
        }
        let short = Records::new(x[..10].to_vec(), 2, y[..5].to_vec()).unwrap();
        assert!(trainer.step(&short, &[]).is_err());
        for (rows, max) in [(vec![2, 0, 1], 3), (vec![2, 4, 1], 3)] {
            assert!(Trainer::with_clients(config, rows, max, 2, seed).is_err());
        }
    }
}

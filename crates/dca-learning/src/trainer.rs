//! The model trainer of the DCA paper's Sec. 4.2: it owns the public parameters and the privacy
//! budget, and each iteration runs one DCA round in which the sampled clients contribute their
//! clipped gradient and every client its share of the distributed discrete Gaussian noise.

use std::borrow::Cow;

use dp_noise::PrivacyLoss;
use dp_noise::rdp::{BaseNoise, DiscreteSum, RdpAccountant, SubsampledGaussian};
use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    ClientId, ClientVectors, DcaRound, DcaTransport, InProcess, RoundConfig, RoundId, RoundParams,
    ShareMode,
};

use crate::client_gradient::{ClientGradient, iteration_rngs};
use crate::model::{
    Model, logistic_intercept_predict_proba, logistic_predict_proba, rows, vi_predict_mean,
};
use crate::optimizer::{Optimizer, OptimizerState};
use crate::range::{FeatureRange, check_ranges, map_row};
use crate::sampling::{ClientSampling, fixed_size_batch};
use crate::{Error, Records, Result};

/// Privacy of the iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Privacy {
    /// Each round's noise has σ_total = z·C per coordinate (at least that much survives T
    /// dropouts/colluders); every iteration is charged to an RDP accountant with this budget and
    /// refused, before anything is released, if it would exceed it.
    Private {
        /// The (ε, δ) budget for the whole training run.
        budget: PrivacyLoss,
        /// z > 0.
        noise_multiplier: f64,
    },
    /// No noise and no clipping (ε = ∞): the same DCA rounds, for baselines and tests.
    NonPrivate,
}

/// Everything public about a training run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainerConfig {
    /// The model.
    pub model: Model,
    /// How each iteration's batch is drawn.
    pub sampling: ClientSampling,
    /// C: every client's gradient is scaled to ℓ2 norm ≤ C (ignored when non-private).
    pub clip_norm: f64,
    /// Noise and budget.
    pub privacy: Privacy,
    /// The update rule.
    pub optimizer: Optimizer,
    /// M ≥ 2 compute nodes.
    pub n_nodes: u16,
    /// T: the clients that may drop out or collude in a round (N − T − 1 ≥ 1 with noise).
    pub max_dropped: usize,
}

/// What one iteration released.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// The iteration (0-based).
    pub iteration: u64,
    /// The DCA release: Σ over sampled, present clients of the clipped gradients, plus noise.
    pub released_sum: Vec<f64>,
    /// σ of the noise actually in `released_sum` (σ_client·√(clients included)); 0 without noise.
    pub noise_sigma_released: f64,
    /// Clients whose shares are in the sum (sampled or not).
    pub n_included: usize,
    /// The total privacy spent after this iteration (None when non-private).
    pub spent: Option<PrivacyLoss>,
}

/// How many records each client holds: one each (`Trainer::new`, with no list of N entries to
/// allocate for N that may come from a caller unchecked), or as listed.
#[derive(Debug, Clone)]
enum ClientRows {
    OneEach(usize),
    Listed(Vec<usize>),
}

impl ClientRows {
    fn len(&self) -> usize {
        match self {
            ClientRows::OneEach(n) => *n,
            ClientRows::Listed(rows) => rows.len(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).map(move |i| match self {
            ClientRows::OneEach(_) => 1,
            ClientRows::Listed(rows) => rows[i],
        })
    }
}

/// The trainer: public parameters, optimizer state, accountant.
#[derive(Debug, Clone)]
pub struct Trainer {
    config: TrainerConfig,
    n_clients: usize,
    /// Records of each client, in record order (client i holds the next `client_rows.get(i)`).
    client_rows: ClientRows,
    /// Σ client_rows.
    n_records: usize,
    /// The most records one client may hold (public: it sizes the fixed-point grid).
    max_rows: usize,
    dim: usize,
    params: Vec<f64>,
    state: OptimizerState,
    accountant: Option<RdpAccountant>,
    iteration: u64,
    rng: RngSource,
    /// The last iteration's released (noisy) sum; empty before the first.
    last_release: Vec<f64>,
    /// Public ranges every record's x is mapped by before its gradient (None: x as given).
    ranges: Option<Vec<FeatureRange>>,
}

impl Trainer {
    /// A trainer for `n_clients` clients with `dim` features each. `rng` supplies the masks,
    /// the noise and the sampling (`RngSource::Os` in production).
    ///
    /// # Errors
    /// Invalid model, optimizer, sampling, C, noise multiplier, budget, N, M or T.
    pub fn new(
        config: TrainerConfig,
        n_clients: usize,
        dim: usize,
        rng: RngSource,
    ) -> Result<Self> {
        Self::build(config, ClientRows::OneEach(n_clients), 1, dim, rng)
    }

    /// A trainer whose client i holds `client_rows[i]` records (a hospital as one client), at
    /// most `max_rows` each. Client i sends the sum of its sampled records' clipped gradients
    /// ([`ClientGradient`]); sensitivity stays per record, the sampling is per record (Poisson:
    /// each record its own coin; fixed size: m of all records), and the normaliser is over
    /// all records. With one record per client it is [`Trainer::new`].
    ///
    /// # Errors
    /// As [`Trainer::new`]; a client with no record or more than `max_rows`.
    pub fn with_clients(
        config: TrainerConfig,
        client_rows: Vec<usize>,
        max_rows: usize,
        dim: usize,
        rng: RngSource,
    ) -> Result<Self> {
        Self::build(config, ClientRows::Listed(client_rows), max_rows, dim, rng)
    }

    fn build(
        config: TrainerConfig,
        client_rows: ClientRows,
        max_rows: usize,
        dim: usize,
        rng: RngSource,
    ) -> Result<Self> {
        let n_clients = client_rows.len();
        let n_records = match &client_rows {
            // N comes from the caller unchecked (up to usize::MAX): nothing here walks N.
            ClientRows::OneEach(n) => *n,
            ClientRows::Listed(rows) => {
                if let Some(&bad) = rows.iter().find(|&&r| r == 0 || r > max_rows) {
                    return Err(Error::InvalidParameter {
                        name: "records of a client",
                        value: bad as f64,
                        requirement: "in 1..=max_rows",
                    });
                }
                rows.iter()
                    .try_fold(0usize, |a, &r| a.checked_add(r))
                    .ok_or(Error::InvalidParameter {
                        name: "records",
                        value: f64::INFINITY,
                        requirement: "a total that fits in usize",
                    })?
            }
        };
        config.model.validate()?;
        config.optimizer.validate()?;
        config.sampling.validate(n_records)?;
        if dim == 0 {
            return Err(Error::InvalidParameter {
                name: "dim",
                value: 0.0,
                requirement: ">= 1",
            });
        }
        let accountant = match config.privacy {
            Privacy::Private {
                budget,
                noise_multiplier,
            } => {
                crate::error::positive_finite("clip_norm", config.clip_norm)?;
                crate::error::positive_finite("noise_multiplier", noise_multiplier)?;
                // Checked: T comes from the caller and may be anything up to usize::MAX.
                if config
                    .max_dropped
                    .checked_add(2)
                    .is_none_or(|m| n_clients < m)
                {
                    return Err(Error::InvalidParameter {
                        name: "max_dropped",
                        value: config.max_dropped as f64,
                        requirement: "<= n_clients - 2 (N - T - 1 >= 1 honest noise share)",
                    });
                }
                Some(RdpAccountant::new(budget)?)
            }
            Privacy::NonPrivate => None,
        };
        // The DCA layer takes vectors of at most MAX_DIM words; refusing a larger θ here also
        // keeps 2d (DP-VI) from overflowing.
        if dim > fixedpoint_shares::MAX_DIM / 2 {
            return Err(Error::InvalidParameter {
                name: "dim",
                value: dim as f64,
                requirement: "<= MAX_DIM / 2 (2^31)",
            });
        }
        let n_params = config.model.n_params(dim);
        let mut params = zeros(n_params, "model parameters")?;
        config.model.fill_initial_params(&mut params);
        let trainer = Trainer {
            params,
            state: OptimizerState::new(
                zeros(n_params, "optimizer state")?,
                zeros(n_params, "optimizer state")?,
            ),
            config,
            n_clients,
            client_rows,
            n_records,
            max_rows,
            dim,
            accountant,
            iteration: 0,
            rng,
            last_release: Vec::new(),
            ranges: None,
        };
        // Validates N, M, T and the noise against the DCA layer once, up front.
        trainer.round_config(1.0)?;
        Ok(trainer)
    }

    /// Logistic regression on public feature ranges, one per feature: each record's x_j is
    /// clamped into [lo_j, hi_j] and mapped onto [−1, 1] before its gradient is computed and
    /// clipped, and [`Trainer::predict`] maps raw rows the same way, so θ is on the mapped
    /// scale. The map is public and per record, so the privacy guarantee is unchanged. For
    /// [`Trainer::step_at_clients`] the remote clients apply it: the rule must carry the ranges.
    ///
    /// # Errors
    /// A model other than logistic regression, a trainer that has already stepped, a count
    /// other than d, or a range with a non-finite end or lo ≥ hi ([`Error::BadRange`], naming
    /// its 0-based column). Nothing is drawn before the check.
    pub fn with_feature_ranges(mut self, ranges: Vec<FeatureRange>) -> Result<Self> {
        if !matches!(self.config.model, Model::Logistic { .. }) {
            return Err(Error::InvalidParameter {
                name: "feature ranges",
                value: ranges.len() as f64,
                requirement: "given for logistic regression only",
            });
        }
        if self.iteration > 0 {
            return Err(Error::InvalidParameter {
                name: "feature ranges after iterations",
                value: self.iteration as f64,
                requirement: "set before the first iteration",
            });
        }
        check_ranges(&ranges, self.dim)?;
        self.ranges = Some(ranges);
        Ok(self)
    }

    /// The public feature ranges, when given.
    pub fn feature_ranges(&self) -> Option<&[FeatureRange]> {
        self.ranges.as_deref()
    }

    /// Predictions for raw rows `x` (row-major, d = the trainer's dim), each mapped by the
    /// public ranges when given: P(y = 1 | x) for logistic regression (with its intercept when
    /// the model has one), the posterior predictive mean for DP-VI BLR.
    ///
    /// # Errors
    /// A length that is not a multiple of d, or a NaN/inf value.
    pub fn predict(&self, x: &[f64]) -> Result<Vec<f64>> {
        // Checked before mapping: clamping would turn ±inf into a range end.
        rows(self.dim, x)?;
        let x: Cow<'_, [f64]> = match &self.ranges {
            None => Cow::Borrowed(x),
            Some(ranges) => {
                let mut mapped = zeros(x.len(), "mapped rows")?;
                for (out, row) in mapped
                    .chunks_exact_mut(self.dim)
                    .zip(x.chunks_exact(self.dim))
                {
                    map_row(ranges, row, out);
                }
                Cow::Owned(mapped)
            }
        };
        match self.config.model {
            Model::Logistic {
                intercept: true, ..
            } => logistic_intercept_predict_proba(&self.params, &x),
            Model::Logistic { .. } => logistic_predict_proba(&self.params, &x),
            Model::LinearRegressionVi { .. } => vi_predict_mean(&self.params, &x),
        }
    }

    /// A record's features as the model sees them: `x`, or `x` mapped into `scratch` by the
    /// public ranges.
    fn features<'a>(&self, x: &'a [f64], scratch: &'a mut [f64]) -> &'a [f64] {
        match &self.ranges {
            None => x,
            Some(ranges) => {
                map_row(ranges, x, scratch);
                scratch
            }
        }
    }

    /// The public parameters θ.
    pub fn params(&self) -> &[f64] {
        &self.params
    }

    /// The last iteration's released noisy sum — what every party of the round saw — or an
    /// empty slice before the first iteration. Public, like the parameters derived from it.
    pub fn last_release(&self) -> &[f64] {
        &self.last_release
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// The privacy spent so far (None when non-private).
    pub fn spent(&self) -> Option<PrivacyLoss> {
        self.accountant.as_ref().map(RdpAccountant::spent)
    }

    /// The configuration.
    pub fn config(&self) -> &TrainerConfig {
        &self.config
    }

    /// The accountant's charge for one iteration (None when non-private): the DCA round's
    /// discrete sum in grid units, with N − T − 1 honest noise shares.
    pub fn step_mechanism(&self) -> Result<Option<SubsampledGaussian>> {
        let Privacy::Private { .. } = self.config.privacy else {
            return Ok(None);
        };
        let round = self.round_config(1.0)?;
        Ok(Some(mechanism_of(
            &self.config,
            &round,
            self.n_clients,
            self.n_records,
        )?))
    }

    /// One iteration: check the budget, run the DCA round, update θ. Clients listed in
    /// `dropped` send nothing (at most T).
    ///
    /// # Errors
    /// [`Error::BudgetExceeded`] / [`Error::TooManyDropped`] before anything is released or
    /// spent; wrong record count or dimension, bad labels, duplicate or unknown dropouts;
    /// [`Error::Diverged`] if the update is not finite. On any error θ, the optimizer state and
    /// the iteration count are unchanged (a DCA failure after the charge keeps the charge).
    pub fn step(&mut self, records: &Records, dropped: &[usize]) -> Result<StepReport> {
        self.step_via(records, dropped, &mut InProcess)
    }

    /// [`Trainer::step`] with the iteration's DCA round run by `transport` — e.g. dca-service's
    /// compute nodes and aggregator over HTTPS. The trainer computes every client's clipped
    /// gradient itself (one process holding all records, as in an experiment) and hands the
    /// matrix to the transport, whose clients shard it with `rng.derive(i)`: with a fixed seed
    /// the release equals the in-process one bit for bit. Errors and guarantees as `step`; a
    /// transport failure changes nothing either (the accountant is committed only afterwards).
    pub fn step_via(
        &mut self,
        records: &Records,
        dropped: &[usize],
        transport: &mut dyn DcaTransport,
    ) -> Result<StepReport> {
        self.check_records(records)?;
        let dropped_ids = self.check_dropped(dropped)?;
        let element_bound = match self.config.privacy {
            Privacy::Private { .. } => self.client_bound(),
            // Non-private: the codec only needs a bound, and revealing it costs nothing here.
            Privacy::NonPrivate => self.max_gradient_element(records) * self.max_rows as f64,
        };
        let (round_rng, sample_rng) = iteration_rngs(&self.rng, self.iteration);
        let gradients = self.batch_gradients(records, sample_rng)?;
        self.run_step(
            ClientVectors::Here(&gradients),
            &dropped_ids,
            element_bound,
            round_rng,
            transport,
        )
    }

    /// One private iteration whose clients are remote parties holding their own records: the
    /// round goes to `transport` with `rule`, the public statement of what each client computes
    /// (the caller's format; it must carry [`Trainer::params`], the sampling rate and C, so
    /// that each client sums its own [`ClientGradient`] with its own coins). The trainer sees
    /// only the release. Errors and guarantees as [`Trainer::step`].
    ///
    /// # Errors
    /// As [`Trainer::step`]; a non-private trainer (its codec bound would come from the data).
    pub fn step_at_clients(
        &mut self,
        rule: &str,
        dropped: &[usize],
        transport: &mut dyn DcaTransport,
    ) -> Result<StepReport> {
        if let Privacy::NonPrivate = self.config.privacy {
            return Err(Error::InvalidParameter {
                name: "privacy",
                value: f64::INFINITY,
                requirement: "private when the clients compute their own gradients",
            });
        }
        let dropped_ids = self.check_dropped(dropped)?;
        let (round_rng, _) = iteration_rngs(&self.rng, self.iteration);
        self.run_step(
            ClientVectors::AtClients(rule),
            &dropped_ids,
            self.client_bound(),
            round_rng,
            transport,
        )
    }

    /// The most a private client's vector holds per coordinate: C per record.
    fn client_bound(&self) -> f64 {
        self.config.clip_norm * self.max_rows as f64
    }

    fn run_step(
        &mut self,
        values: ClientVectors<'_>,
        dropped_ids: &[ClientId],
        element_bound: f64,
        round_rng: RngSource,
        transport: &mut dyn DcaTransport,
    ) -> Result<StepReport> {
        let round = self.round_config(element_bound)?;
        let mut next_accountant = self.accountant.clone();
        let spent = match next_accountant.as_mut() {
            Some(acc) => {
                let mechanism = mechanism_of(&self.config, &round, self.n_clients, self.n_records)?;
                Some(acc.try_spend(&mechanism, 1)?)
            }
            None => None,
        };
        let release = transport.run_round(&DcaRound {
            config: &round,
            values,
            dropped: dropped_ids,
            l2_sensitivity: match self.config.privacy {
                Privacy::Private { .. } => self.config.clip_norm,
                Privacy::NonPrivate => 0.0,
            },
            rng: round_rng,
        })?;

        let normaliser = self.config.sampling.normaliser(self.n_records);
        let mut gradient: Vec<f64> = release.sum.iter().map(|s| s / normaliser).collect();
        self.config
            .model
            .add_public_gradient(&self.params, self.n_records, &mut gradient);
        let (new_params, new_state) =
            self.state
                .propose(&self.config.optimizer, &self.params, &gradient);
        if new_params.iter().any(|p| !p.is_finite()) {
            return Err(Error::Diverged {
                iteration: self.iteration,
            });
        }
        self.params = new_params;
        self.state = new_state;
        self.accountant = next_accountant;
        self.last_release.clone_from(&release.sum);
        let report = StepReport {
            iteration: self.iteration,
            released_sum: release.sum,
            noise_sigma_released: release.noise_sigma_released,
            n_included: release.n_included,
            spent,
        };
        self.iteration += 1;
        Ok(report)
    }

    /// Up to `iterations` steps without dropouts; stops early (Ok) when the next step would
    /// exceed the budget. Returns the number of steps done.
    pub fn fit(&mut self, records: &Records, iterations: u64) -> Result<u64> {
        for done in 0..iterations {
            match self.step(records, &[]) {
                Ok(_) => {}
                Err(Error::BudgetExceeded { .. }) => return Ok(done),
                Err(e) => return Err(e),
            }
        }
        Ok(iterations)
    }

    fn check_records(&self, records: &Records) -> Result<()> {
        if records.len() != self.n_records {
            return Err(Error::LengthMismatch {
                what: "records (the clients' rows in order)",
                expected: self.n_records,
                actual: records.len(),
            });
        }
        if records.dim() != self.dim {
            return Err(Error::LengthMismatch {
                what: "features per record",
                expected: self.dim,
                actual: records.dim(),
            });
        }
        self.config.model.check_labels(records.labels())
    }

    fn check_dropped(&self, dropped: &[usize]) -> Result<Vec<ClientId>> {
        let mut sorted = dropped.to_vec();
        sorted.sort_unstable();
        for w in sorted.windows(2) {
            if w[0] == w[1] {
                return Err(Error::InvalidParameter {
                    name: "dropped client (duplicate)",
                    value: w[0] as f64,
                    requirement: "listed once",
                });
            }
        }
        if let Some(&bad) = sorted.iter().find(|&&i| i >= self.n_clients) {
            return Err(Error::InvalidParameter {
                name: "dropped client",
                value: bad as f64,
                requirement: "< n_clients",
            });
        }
        if sorted.len() > self.config.max_dropped {
            return Err(Error::TooManyDropped {
                dropped: sorted.len(),
                max_dropped: self.config.max_dropped,
            });
        }
        Ok(sorted.into_iter().map(|i| ClientId(i as u64)).collect())
    }

    /// Max |∂θ ℓ_i| over every record, at the current θ (non-private mode only).
    fn max_gradient_element(&self, records: &Records) -> f64 {
        let mut g = vec![0.0; self.params.len()];
        let mut scratch = vec![0.0; self.dim];
        let mut max = 0.0f64;
        for i in 0..records.len() {
            let x = self.features(records.x(i), &mut scratch);
            self.config
                .model
                .record_gradient(&self.params, x, records.y(i), &mut g);
            max = g.iter().fold(max, |m, v| m.max(v.abs()));
        }
        (max * (1.0 + 1e-9)).max(1e-12)
    }

    /// Row-major N × p: row i is client i's [`ClientGradient`] over its records — those in
    /// this iteration's batch (fixed-size: m of all records drawn by the trainer; Poisson:
    /// each record's own coin from `sample_rng.derive(i)`), zeros if none is — every client
    /// joins every round, so the nodes and the aggregator never learn the batch.
    fn batch_gradients(&self, records: &Records, sample_rng: RngSource) -> Result<Vec<f64>> {
        let p = self.params.len();
        let mut gradients = zeros(self.n_clients.saturating_mul(p), "gradient matrix")?;
        let batch_mask = match self.config.sampling {
            ClientSampling::FixedSize { batch } => Some(fixed_size_batch(
                &mut sample_rng.try_rng()?,
                self.n_records,
                batch,
            )),
            ClientSampling::Poisson { .. } => None,
        };
        let clip = match self.config.privacy {
            Privacy::Private { .. } => Some(self.config.clip_norm),
            Privacy::NonPrivate => None,
        };
        let mut scratch = vec![0.0; self.dim];
        let mut first = 0;
        for (i, (out, rows)) in gradients
            .chunks_exact_mut(p.max(1))
            .zip(self.client_rows.iter())
            .enumerate()
        {
            let mut sum = match self.config.sampling {
                ClientSampling::Poisson { rate } => ClientGradient::poisson(
                    self.config.model,
                    &self.params,
                    self.dim,
                    clip,
                    rate,
                    sample_rng.derive(i as u64),
                )?,
                ClientSampling::FixedSize { .. } => {
                    ClientGradient::all(self.config.model, &self.params, self.dim, clip)?
                }
            };
            for r in first..first + rows {
                let in_batch = batch_mask.as_ref().is_none_or(|mask| mask[r]);
                let x = self.features(records.x(r), &mut scratch);
                sum.push_one(x, records.y(r), in_batch);
            }
            first += rows;
            out.copy_from_slice(&sum.finish());
        }
        Ok(gradients)
    }

    fn round_config(&self, element_bound: f64) -> Result<RoundConfig> {
        let noise_sigma_total = match self.config.privacy {
            Privacy::Private {
                noise_multiplier, ..
            } => Some(noise_multiplier * self.config.clip_norm),
            Privacy::NonPrivate => None,
        };
        Ok(RoundConfig::new(&RoundParams {
            round: RoundId(self.iteration),
            n_clients: self.n_clients,
            n_nodes: self.config.n_nodes,
            max_dropped: self.config.max_dropped,
            dim: self.params.len(),
            bound: element_bound,
            mode: ShareMode::Seed,
            noise_sigma_total,
            frac_bits: None,
        })?)
    }
}

/// The accountant's view of one round: sampling, and the discrete sum in grid units.
fn mechanism_of(
    config: &TrainerConfig,
    round: &RoundConfig,
    n_clients: usize,
    n_records: usize,
) -> Result<SubsampledGaussian> {
    let noise = round.noise().ok_or(Error::InvalidParameter {
        name: "noise",
        value: 0.0,
        requirement: "present in a private round",
    })?;
    Ok(SubsampledGaussian {
        sampling: config.sampling.accounting(n_records),
        noise: BaseNoise::DistributedDiscrete(DiscreteSum {
            clip_units: config.clip_norm * round.codec().scale(),
            sigma_client_units: noise.sigma_client_units,
            honest_clients: n_clients - config.max_dropped - 1,
            dim: round.dim(),
        }),
    })
}

/// The smallest noise multiplier z for which `iterations` iterations of a trainer with this
/// configuration (its `privacy` field is ignored) on `n_clients` × `dim` stay within `target`,
/// by bisection over the very mechanism the trainer charges (the DCA grid depends on z).
pub fn calibrate_noise_multiplier(
    config: &TrainerConfig,
    n_clients: usize,
    dim: usize,
    target: PrivacyLoss,
    iterations: u64,
) -> Result<f64> {
    config.sampling.validate(n_clients)?;
    crate::error::positive_finite("clip_norm", config.clip_norm)?;
    let n_params = config.model.n_params(dim);
    let z = dp_noise::rdp::calibrate_noise_multiplier_with(target, iterations, |z| {
        let round = RoundConfig::new(&RoundParams {
            round: RoundId(0),
            n_clients,
            n_nodes: config.n_nodes,
            max_dropped: config.max_dropped,
            dim: n_params,
            bound: config.clip_norm,
            mode: ShareMode::Seed,
            noise_sigma_total: Some(z * config.clip_norm),
            frac_bits: None,
        })
        .map_err(|_| dp_noise::Error::CalibrationFailed {
            reason: "no DCA round configuration for this noise multiplier",
        })?;
        mechanism_of(config, &round, n_clients, n_clients).map_err(|_| {
            dp_noise::Error::CalibrationFailed {
                reason: "no DCA round configuration for this noise multiplier",
            }
        })
    })?;
    Ok(z)
}

/// `len` zeros, or [`fixedpoint_shares::Error::Allocation`] when the allocator refuses them (a
/// length from the caller must not abort the process).
fn zeros(len: usize, what: &'static str) -> Result<Vec<f64>> {
    let refused = || {
        Error::Shares(fixedpoint_shares::Error::Allocation {
            what,
            bytes: len.saturating_mul(size_of::<f64>()),
        })
    };
    if len == usize::MAX {
        return Err(refused());
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| refused())?;
    out.resize(len, 0.0);
    Ok(out)
}

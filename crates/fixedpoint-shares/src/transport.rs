//! Where a DCA round runs: [`InProcess`] (`simulate_round_with`: clients, nodes and aggregator in
//! this process) or any other [`DcaTransport`], e.g. dca-service's compute-node and aggregator
//! processes over HTTPS. A learner plans a round — configuration, noise, inputs, randomness — and
//! hands it to a transport, so the same learner code runs in one process or across organisations,
//! and with a fixed seed both release the same sum bit for bit.

use dp_noise::rng::RngSource;

use crate::{ClientId, Release, Result, RoundConfig, simulate_round_with};

/// One planned DCA round, handed to a [`DcaTransport`] to run.
#[derive(Debug)]
pub struct DcaRound<'a> {
    /// The round's configuration (N, M, T, d, bound, mode, σ_total, fixed-point precision).
    pub config: &'a RoundConfig,
    /// The clients' vectors, here or computed by the clients themselves.
    pub values: ClientVectors<'a>,
    /// Clients that send nothing (at most T): an experiment's simulated dropouts.
    pub dropped: &'a [ClientId],
    /// Δ₂ of the sum the noise is calibrated for (value units); a remote aggregator charges its
    /// accountant from it.
    pub l2_sensitivity: f64,
    /// Client i draws its noise and masks from `rng.derive(i)`, as `simulate_round_with` does.
    pub rng: RngSource,
}

/// Where the clients' vectors are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClientVectors<'a> {
    /// Row-major `N × d`: row i is client i's vector (already checked against the bound).
    Here(&'a [f64]),
    /// The clients are remote parties that keep their data and compute their vectors
    /// themselves from this public rule (published with the round; the learner that planned
    /// the round defines its format). Only a transport whose clients are such parties can run
    /// this round.
    AtClients(&'a str),
}

/// Where a DCA round runs. Implementations give client i the randomness `round.rng.derive(i)`,
/// so that a fixed seed reproduces [`InProcess`] bit for bit.
pub trait DcaTransport {
    /// Runs the round and returns its release (all N clients but the dropped ones included).
    ///
    /// # Errors
    /// The round's own errors ([`crate::Error::TooManyDropped`], …), or
    /// [`crate::Error::Transport`] when a remote party cannot complete it.
    fn run_round(&mut self, round: &DcaRound<'_>) -> Result<Release>;
}

/// The whole round in this process (`simulate_round_with`).
#[derive(Clone, Copy, Debug, Default)]
pub struct InProcess;

impl DcaTransport for InProcess {
    fn run_round(&mut self, round: &DcaRound<'_>) -> Result<Release> {
        let dim = round.config.dim();
        let ClientVectors::Here(values) = round.values else {
            return Err(crate::Error::Transport(
                "the in-process round needs the clients' vectors, not a rule for remote clients"
                    .into(),
            ));
        };
        if values.len() != round.config.n_clients().saturating_mul(dim) {
            return Err(crate::Error::LengthMismatch {
                what: "round values (N × d)",
                expected: round.config.n_clients().saturating_mul(dim),
                actual: values.len(),
            });
        }
        simulate_round_with(
            round.config,
            |i, out| {
                out.copy_from_slice(&values[i * dim..(i + 1) * dim]);
                Ok(())
            },
            round.dropped,
            round.rng,
        )
    }
}

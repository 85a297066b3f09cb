//! Iterative private learning over the network (DCA paper Sec. 4.2): a `dca_learning::Trainer`
//! whose every iteration runs its DCA round on a `dpdist aggregator` server and `dpdist node`
//! processes through a [`NetworkTransport`]. The trainer — public parameters, optimizer state,
//! RDP accountant, batch sampling — is dca-learning's own code, so with the same fixed seed the
//! network run releases each iteration's noisy gradient sum, and ends with the parameters, of
//! the in-process `Trainer::fit` bit for bit.
//!
//! Every iteration is one round on the aggregator, numbered by the trainer from 0; the
//! aggregator refuses a round id it has seen with another configuration, so one aggregator
//! database serves one training run. The aggregator's own accountant charges each round its
//! zCDP cost *without* the amplification by subsampling that the trainer's RDP accountant counts
//! (the clients flip their own sampling coins, so the amplification holds against the aggregator
//! too, but the aggregator cannot check it): give it a budget for the iterations, not the
//! trainer's (ε, δ).

use dca_learning::{Records, StepReport, Trainer};

use crate::analyst::fit::NetworkTransport;
use crate::{Error, Result};

/// What a training run over the network did.
pub struct NetworkTraining {
    /// The trainer after the run (its parameters, spent budget, iteration count).
    pub trainer: Trainer,
    /// Each iteration's release, in order.
    pub steps: Vec<StepReport>,
    /// The transport (its `releases` are what the aggregator published).
    pub transport: NetworkTransport,
}

/// Up to `iterations` iterations of `trainer` on `records`, each a DCA round over `transport`;
/// stops early (Ok) when the next iteration would exceed the trainer's budget, as
/// `Trainer::fit` does. Runs on a blocking thread of the transport's runtime.
///
/// # Errors
/// The trainer's errors ([`Error::Training`]), a round the services could not complete.
pub async fn train_over_network(
    mut transport: NetworkTransport,
    mut trainer: Trainer,
    records: Records,
    iterations: u64,
) -> Result<NetworkTraining> {
    tokio::task::spawn_blocking(move || {
        let mut steps = Vec::new();
        for _ in 0..iterations {
            match trainer.step_via(&records, &[], &mut transport) {
                Ok(step) => steps.push(step),
                Err(dca_learning::Error::BudgetExceeded { .. }) => break,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(NetworkTraining {
            trainer,
            steps,
            transport,
        })
    })
    .await
    .map_err(|e| Error::Http(format!("training task: {e}")))?
}

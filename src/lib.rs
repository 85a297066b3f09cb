//! dpdist: differentially private Bayesian learning on distributed data.
//!
//! This umbrella crate only re-exports the workspace crates; see the README and the book (docs/) for the map.
//!
//! ```
//! // (ε, δ) = (1, 1e-5), L2 sensitivity 1: the σ of the total noise of a DCA release.
//! let sigma = dpdist::dp_noise::calibrate::gaussian_sigma_analytic(1.0, 1e-5, 1.0)?;
//! assert!(sigma > 3.0 && sigma < 4.0);
//! # Ok::<(), dpdist::dp_noise::Error>(())
//! ```

pub use blr;
pub use dca_learning;
pub use dp_noise;
pub use fixedpoint_shares;
pub use plr_stacking;
pub use projection;

/// The README and every page of the book (docs/src), included only when rustdoc collects
/// doctests, so that `cargo test --doc -p dpdist` compiles and runs their ```rust blocks
/// (docs/src/contributing.md; scripts/book-blocks.py checks that every page with a Rust block is
/// listed here).
/// `LANG,norun` is the book's marker for blocks never run; rustdoc, which skips every non-Rust
/// block anyway, would take `norun` for a misspelt `no_run`.
#[cfg(doctest)]
#[allow(rustdoc::invalid_codeblock_attributes)]
mod book {
    #[doc = include_str!("../README.md")]
    pub struct Readme;

    #[doc = include_str!("../docs/src/architecture.md")]
    pub struct Architecture;

    #[doc = include_str!("../docs/src/contributing.md")]
    pub struct Contributing;

    #[doc = include_str!("../docs/src/getting-started.md")]
    pub struct GettingStarted;

    #[doc = include_str!("../docs/src/hosts/c.md")]
    pub struct HostsC;

    #[doc = include_str!("../docs/src/hosts/cpp.md")]
    pub struct HostsCpp;

    #[doc = include_str!("../docs/src/hosts/julia.md")]
    pub struct HostsJulia;

    #[doc = include_str!("../docs/src/hosts/learning.md")]
    pub struct HostsLearning;

    #[doc = include_str!("../docs/src/hosts/r.md")]
    pub struct HostsR;

    #[doc = include_str!("../docs/src/introduction.md")]
    pub struct Introduction;

    #[doc = include_str!("../docs/src/limits.md")]
    pub struct Limits;

    #[doc = include_str!("../docs/src/regression.md")]
    pub struct Regression;

    #[doc = include_str!("../docs/src/privacy.md")]
    pub struct Privacy;

    #[doc = include_str!("../docs/src/results/blr-calibration.md")]
    pub struct ResultsBlrCalibration;

    #[doc = include_str!("../docs/src/results/crates-vs-own.md")]
    pub struct ResultsCratesVsOwn;
    #[doc = include_str!("../docs/src/results/dca-table1.md")]
    pub struct ResultsDcaTable1;

    #[doc = include_str!("../docs/src/results/distributed-blr.md")]
    pub struct ResultsDistributedBlr;

    #[doc = include_str!("../docs/src/results/hpke-open.md")]
    pub struct ResultsHpkeOpen;

    #[doc = include_str!("../docs/src/results/index.md")]
    pub struct ResultsIndex;

    #[doc = include_str!("../docs/src/results/iterative.md")]
    pub struct ResultsIterative;

    #[doc = include_str!("../docs/src/results/kernels.md")]
    pub struct ResultsKernels;

    #[doc = include_str!("../docs/src/results/network-demo.md")]
    pub struct ResultsNetworkDemo;

    #[doc = include_str!("../docs/src/results/network-load.md")]
    pub struct ResultsNetworkLoad;

    #[doc = include_str!("../docs/src/results/node-cpu.md")]
    pub struct ResultsNodeCpu;

    #[doc = include_str!("../docs/src/results/node-memory.md")]
    pub struct ResultsNodeMemory;

    #[doc = include_str!("../docs/src/results/noise-samplers.md")]
    pub struct ResultsNoiseSamplers;

    #[doc = include_str!("../docs/src/results/peers.md")]
    pub struct ResultsPeers;

    #[doc = include_str!("../docs/src/results/silo-statistics.md")]
    pub struct ResultsSiloStatistics;

    #[doc = include_str!("../docs/src/results/real-data.md")]
    pub struct ResultsRealData;

    #[doc = include_str!("../docs/src/results/regression-calibration.md")]
    pub struct ResultsRegressionCalibration;

    #[doc = include_str!("../docs/src/results/privacy-audit.md")]
    pub struct ResultsPrivacyAudit;

    #[doc = include_str!("../docs/src/results/jobs.md")]
    pub struct ResultsJobs;

    #[doc = include_str!("../docs/src/results/stacking.md")]
    pub struct ResultsStacking;

    #[doc = include_str!("../docs/src/services/deploying.md")]
    pub struct ServicesDeploying;

    #[doc = include_str!("../docs/src/services/http-api.md")]
    pub struct ServicesHttpApi;

    #[doc = include_str!("../docs/src/services/jobs.md")]
    pub struct ServicesJobs;

    #[doc = include_str!("../docs/src/services/networked-round.md")]
    pub struct ServicesNetworkedRound;

    #[doc = include_str!("../docs/src/services/running.md")]
    pub struct ServicesRunning;

    #[doc = include_str!("../docs/src/threat-model.md")]
    pub struct ThreatModel;
}

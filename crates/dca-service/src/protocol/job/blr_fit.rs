//! The `blr` job kind: Alg. 2 of the DCA paper, its fit configured for DCA.

use fixedpoint_shares::ShareMode;

/// Alg. 2 with DCA on `n_nodes` compute nodes, T = `max_dropped`, Gaussian noise at (ε, δ),
/// assumed bounds ±7.5 (the prepared data's), projection with the DP std round and the DCA
/// paper's search.
pub fn dca_blr_config(
    d: usize,
    n_nodes: u16,
    max_dropped: usize,
    mode: ShareMode,
    budget: dp_noise::PrivacyLoss,
) -> blr::FitConfig {
    blr::FitConfig {
        aggregation: projection::Aggregation::Distributed(projection::DcaSettings {
            n_nodes,
            max_dropped,
            mode,
        }),
        mechanism: blr::Mechanism::Gaussian,
        budget,
        assumed_x: vec![7.5; d],
        assumed_y: 7.5,
        projection: Some(blr::ProjectionConfig::default()),
        prior: blr::Prior::default(),
        with_yy: false,
    }
}

//! The noise of `dpdist round create`, from its `--epsilon`, `--sigma` or `--no-noise`.

use dca_service::{Error, Result};
use dp_noise::limits;

/// The noise of `round create`: `Some((σ, Δ₂))`, or `None` for an explicit `--no-noise`. Checked
/// before anything is read or contacted.
pub fn round_noise(
    epsilon: Option<f64>,
    delta: f64,
    sigma: Option<f64>,
    l2_sensitivity: Option<f64>,
    no_noise: bool,
    bound: f64,
    dim: usize,
) -> Result<Option<(Option<f64>, Option<f64>)>> {
    let privacy = |e: dp_noise::Error| Error::InvalidSpec(e.to_string());
    match (epsilon, sigma, no_noise) {
        (None, None, false) => Err(Error::InvalidSpec(
            "round create needs a noise level: --epsilon E [--delta D] (σ calibrated with the \
             analytic Gaussian for ℓ2 sensitivity --l2-sensitivity, default 2·bound·√dim), or \
             --no-noise for an exact, NON-PRIVATE sum"
                .into(),
        )),
        (None, None, true) => Ok(None),
        (Some(_), Some(_), _) | (Some(_), _, true) | (_, Some(_), true) => Err(Error::InvalidSpec(
            "give only one of --epsilon, --sigma and --no-noise".into(),
        )),
        (Some(epsilon), None, false) => {
            let budget = limits::gaussian_budget(epsilon, delta).map_err(privacy)?;
            let l2 = match l2_sensitivity {
                Some(l2) => l2,
                // Replace-one (the neighbourhood used throughout): one client's vector, every
                // element in [−bound, bound], replaced by another.
                None => 2.0 * bound * (dim as f64).sqrt(),
            };
            let l2 = limits::sensitivity("l2_sensitivity", l2).map_err(privacy)?;
            let sigma =
                dp_noise::calibrate::gaussian_sigma_analytic(budget.epsilon, budget.delta, l2)
                    .map_err(privacy)?;
            eprintln!(
                "dpdist: σ = {sigma:.6} calibrated for (ε, δ) = ({}, {}), ℓ2 sensitivity {l2}{} \
                 (analytic Gaussian); each client adds σ/√(N − T − 1)",
                budget.epsilon,
                budget.delta,
                if l2_sensitivity.is_none() {
                    " (2·bound·√dim, replace-one neighbours)"
                } else {
                    ""
                }
            );
            Ok(Some((Some(sigma), Some(l2))))
        }
        (None, Some(sigma), false) => {
            let sigma = limits::sigma("sigma", sigma).map_err(privacy)?;
            let Some(l2) = l2_sensitivity else {
                return Err(Error::InvalidSpec(
                    "--sigma needs --l2-sensitivity (what the accountant charges)".into(),
                ));
            };
            let l2 = limits::sensitivity("l2_sensitivity", l2).map_err(privacy)?;
            Ok(Some((Some(sigma), Some(l2))))
        }
    }
}

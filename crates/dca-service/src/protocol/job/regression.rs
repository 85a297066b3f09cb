//! The `regression` job kind: the regression a statistician expects (`blr::regression`: an
//! intercept, coefficients in the data's units, standard errors, a DP R² against the constant
//! predictor) over the participants' rows.
//!
//! One DCA round: each participant contributes [`blr::Contribution::DesignStatistics`] of the
//! design the job's public column ranges make ([`JobSpec::design`]), computed from its rows as
//! they are in its file (the design maps and clips them itself). The driver fits with
//! `blr::fit_regression_held` over the remote holders — the library's own code, so with the
//! same seeds the job's result is the in-process fit's bit for bit. The result carries the
//! design, so that anyone can predict from it ([`RegressionResult::predict`], `dpdist job
//! predict`) exactly as `blr::Regression::predict` does.

use blr::Contribution;
use serde::{Deserialize, Serialize};

use super::blr_fit::ContributionRule;
use super::kind::{JobRounds, RoundRule, done, over_participants, refuse};
use crate::protocol::job::{JobRound, JobSpec};
use crate::{Error, Result};

/// A finished `regression` job's result, in the data's units (all post-processing of the
/// release).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegressionResult {
    /// The job kind the result is of ("regression"): a file of another kind's result is named
    /// as such when read.
    pub kind: String,
    /// Names of the coefficients: "(Intercept)", then the features in the job's order.
    pub names: Vec<String>,
    /// The intercept, then one slope per feature.
    pub coefficients: Vec<f64>,
    /// Standard errors of `coefficients` (null for a slope not estimated: a fit that is the
    /// constant predictor).
    pub std_errors: Vec<Option<f64>>,
    /// The target column.
    pub target: String,
    /// The DP adjusted R² from the released statistics; null when their total sum of squares
    /// was not positive.
    pub r_squared: Option<f64>,
    /// The sd of the release's noise in `r_squared` (first order).
    pub r_squared_sd: f64,
    /// The residual sd σ̂, in the target's units.
    pub residual_sd: f64,
    /// The constant predictor the R² is measured against (the DP mean of the target).
    pub constant: f64,
    /// Records the statistics were computed over (the accepted participants' rows).
    pub records: usize,
    /// What a reader must know (noise that dominates, a fit no better than the constant);
    /// null only when there is nothing to say.
    pub warnings: Option<Vec<String>>,
    /// Privacy the job charged, as (ε, δ).
    pub spent_epsilon: f64,
    /// See `spent_epsilon`.
    pub spent_delta: f64,
    /// The public ranges (features in order, then the target) and the intercept the model was
    /// fitted with: what prediction clips to.
    pub design: blr::Design,
}

impl RegressionResult {
    /// The published form of `fit`, a regression over `spec`'s columns.
    pub fn of(spec: &JobSpec, fit: &blr::Regression) -> Self {
        let features: Vec<&str> = spec.features.iter().map(|c| c.name.as_str()).collect();
        let mut result = Self::of_columns(&features, &spec.target.name, fit);
        result.spent_delta = spec.spent_delta(fit.spent);
        result
    }

    /// The published form of `fit`, a regression of `target` on `features` (in model order).
    pub fn of_columns(features: &[&str], target: &str, fit: &blr::Regression) -> Self {
        RegressionResult {
            kind: "regression".into(),
            names: std::iter::once("(Intercept)")
                .chain(features.iter().copied())
                .map(str::to_string)
                .collect(),
            coefficients: std::iter::once(fit.intercept)
                .chain(fit.coefficients.iter().copied())
                .collect(),
            // JSON has no NaN: a slope without an error is null.
            std_errors: fit
                .std_errors()
                .into_iter()
                .map(|s| s.is_finite().then_some(s))
                .collect(),
            target: target.to_string(),
            r_squared: fit.r_squared,
            r_squared_sd: fit.r_squared_sd,
            residual_sd: fit.residual_sd,
            constant: fit.constant,
            records: fit.stats.n,
            warnings: (!fit.warnings.is_empty()).then(|| fit.warnings.clone()),
            spent_epsilon: fit.spent.epsilon,
            spent_delta: fit.spent.delta,
            design: fit.design.clone(),
        }
    }

    /// Reads a result as `dpdist job result` prints it (or `dpdist blr --regression`'s report,
    /// which holds it under `regression`); a file that is another kind's result, or no job's,
    /// is named as such.
    pub fn from_json(text: &str, what: &str) -> Result<Self> {
        let bad = |m: String| Error::InvalidSpec(format!("{what}: {m}"));
        let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            bad(format!(
                "not JSON ({e}); expected a regression job's result"
            ))
        })?;
        // `dpdist blr --regression`'s report holds the same result under "regression".
        if let Some(inner) = value.get_mut("regression").filter(|v| v.is_object()) {
            value = inner.take();
        }
        let has = |k: &str| value.get(k).is_some();
        let other = if has("mean") && has("precision") {
            Some("blr")
        } else if has("weights") && has("noise_multiplier") {
            Some("train")
        } else if has("sums") && has("released") {
            Some("sum")
        } else {
            None
        };
        if other == Some("train") {
            return Err(bad(
                "this is a \"train\" job's result, which does not hold the job's feature map: \
                 predict from the job itself (`dpdist job predict --job <id>`)"
                    .into(),
            ));
        }
        if let Some(kind) = other {
            return Err(bad(format!(
                "this is a {kind:?} job's result; predictions need a \"regression\" job's \
                 result (its coefficients and design)"
            )));
        }
        let result: RegressionResult = serde_json::from_value(value)
            .map_err(|e| bad(format!("not a regression job's result: {e}")))?;
        if result.kind != "regression" {
            return Err(bad(format!(
                "kind {:?}: predictions need a \"regression\" job's result",
                result.kind
            )));
        }
        result
            .design
            .validate()
            .map_err(|e| bad(format!("its design: {e}")))?;
        let width = result.design.columns() + 1;
        if result.coefficients.len() != width || result.names.len() != width {
            return Err(bad(format!(
                "{} coefficients and {} names for a design of {} features (an intercept and \
                 one slope per feature expected)",
                result.coefficients.len(),
                result.names.len(),
                result.design.columns()
            )));
        }
        Ok(result)
    }

    /// The features' names, in model order.
    pub fn features(&self) -> Vec<&str> {
        self.names[1..].iter().map(String::as_str).collect()
    }

    /// Predictions for the rows of `table` (which must have every feature column; others are
    /// ignored), exactly as `blr::Regression::predict` computes them: each value clipped to
    /// its public range, each prediction to the target's.
    pub fn predict(&self, table: &blr::data::Table) -> Result<Vec<f64>> {
        let x = crate::protocol::job::columns_of(table, &self.features(), "the model reads")?;
        Ok(blr::predict_rows(
            &self.design,
            self.coefficients[0],
            &self.coefficients[1..],
            &x,
        )?)
    }
}

/// The library's settings of `spec`'s regression over DCA on `n_nodes` nodes: its defaults, the
/// ranges round (step 1) then the statistics of the narrowed ranges (step 2).
pub fn regression_config(spec: &JobSpec, n_nodes: u16) -> Result<blr::RegressionConfig> {
    Ok(blr::RegressionConfig {
        aggregation: projection::Aggregation::Distributed(projection::DcaSettings {
            n_nodes,
            max_dropped: spec.max_dropped,
            mode: spec.share_mode(),
        }),
        ..blr::RegressionConfig::new(spec.design()?, spec.noise_budget()?)
    })
}

/// The aggregator's side of a `regression` job: the library's regression over the
/// participants (the ranges round, then the statistics round).
pub(super) fn drive(
    spec: &JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    rounds: &mut dyn JobRounds,
) -> Result<()> {
    let config = regression_config(spec, n_nodes)?;
    let fit = over_participants(spec, &rows, rounds, |h, rng, t| {
        blr::fit_regression_held(h, &config, rng, t)
    })?;
    let result = RegressionResult::of(spec, &fit);
    done(spec, rounds, |s| s.regression_result = Some(result.clone()))
}

/// The participant's side of a `regression` job: step 1 the learner's
/// [`Contribution::DesignMoments`] of the design the job's public ranges make (or, without the
/// ranges round, its statistics), step 2 its [`Contribution::DesignStatistics`] of ranges
/// narrowed inside them, from its rows as they are in its file (the design maps them).
pub(super) fn round_rule(spec: &JobSpec, job_round: &JobRound) -> Result<Box<dyn RoundRule>> {
    let rule = Contribution::from_json(&job_round.rule)?;
    let design = spec.design()?;
    if !step_is_the_jobs(&design, &rule, job_round.step) {
        return refuse(
            job_round,
            format!(
                "its rule (step {}) is not the job's design's: step 1 the ranges round of its \
                 columns' public ranges (or their statistics), step 2 the statistics of ranges \
                 inside them, with an intercept",
                job_round.step
            ),
        );
    }
    Ok(Box::new(ContributionRule {
        rule,
        raw_rows: true,
    }))
}

/// Whether `rule` is what step `step` of a `regression` job on `design` may ask: step 1 the
/// ranges round of the public design (or, without it, the statistics of the public design);
/// step 2 the statistics of a design narrowed inside it — same columns, intercept and block
/// shares, every range within the public one. The noise is calibrated on the unit scale, so any
/// such ranges keep the round's sensitivity; the check keeps a driver from widening them.
fn step_is_the_jobs(design: &blr::Design, rule: &Contribution, step: u64) -> bool {
    let inside = |r: &blr::PublicRange, public: &blr::PublicRange| {
        r.lower >= public.lower && r.upper <= public.upper
    };
    match (step, rule) {
        (
            1,
            Contribution::DesignMoments { design: d }
            | Contribution::DesignStatistics { design: d },
        ) => d == design,
        (2, Contribution::DesignStatistics { design: d }) => {
            d.intercept == design.intercept
                && d.shares == design.shares
                && d.indicator_groups == design.indicator_groups
                && d.x.len() == design.x.len()
                && d.x.iter().zip(&design.x).all(|(r, p)| inside(r, p))
                && inside(&d.y, &design.y)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::job::JobKind;

    fn spec() -> JobSpec {
        JobSpec {
            kind: JobKind::Regression,
            ..crate::protocol::job::tests::spec()
        }
    }

    #[test]
    fn a_result_reads_back_and_predicts_as_the_library() {
        let spec = spec();
        spec.validate().unwrap();
        let design = spec.design().unwrap();
        // x in [−1, 1], y in [0, 10]: y = 5 + 2x, exact statistics (NON-PRIVATE).
        let x = [-1.0, -0.5, 0.0, 0.5, 1.0];
        let y: Vec<f64> = x.iter().map(|v| 5.0 + 2.0 * v).collect();
        let z = design.rows(&x).unwrap();
        let t: Vec<f64> = y.iter().map(|v| design.y.to_unit(*v)).collect();
        let stats = blr::SuffStats::compute(&z, &t, y.len(), design.width()).unwrap();
        let fit =
            blr::regression_from_stats(&design, &stats, blr::block_shares::BlockNoise::NONE, 1e-9)
                .unwrap();
        let result = RegressionResult::of(&spec, &fit);
        assert_eq!(result.names, vec!["(Intercept)", "a"]);
        assert!(result.warnings.is_none());
        let text = serde_json::to_string_pretty(&result).unwrap();
        assert!(text.contains("\"warnings\": null"), "{text}");
        let back = RegressionResult::from_json(&text, "--result").unwrap();
        assert_eq!(back, result);
        let table = blr::data::Table::parse_csv("b,a\n1,0.25\n2,7\n3,-3\n").unwrap();
        let p = back.predict(&table).unwrap();
        assert_eq!(p, fit.predict(&[0.25, 7.0, -3.0]).unwrap());
        assert!(
            (p[0] - 5.5).abs() < 1e-6 && (p[1] - 7.0).abs() < 1e-6,
            "{p:?}"
        );
    }

    #[test]
    fn a_result_of_another_kind_or_shape_is_refused_with_its_cause() {
        let cases = [
            (r#"{"mean":[1],"precision":[1]}"#, "\"blr\" job's result"),
            (r#"{"sums":[1],"released":[1]}"#, "\"sum\" job's result"),
            (
                r#"{"weights":[1],"noise_multiplier":1,"sums":[]}"#,
                "\"train\"",
            ),
            ("[1, 2", "not JSON"),
            (r#"{"kind":"regression"}"#, "not a regression job's result"),
        ];
        for (text, word) in cases {
            let e = RegressionResult::from_json(text, "--result r.json")
                .unwrap_err()
                .to_string();
            assert!(e.contains(word) && e.contains("r.json"), "{word}: {e}");
        }
    }
}

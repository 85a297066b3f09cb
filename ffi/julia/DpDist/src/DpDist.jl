"""
    DpDist

Julia bindings to the dpdist C library (`include/dpdist.h`): calibration of Gaussian and
Laplace noise, exact discrete samplers, a privacy accountant, and DCA — a secure sum over
additive secret shares in fixed point in which every client adds a share of the Gaussian noise,
so that the released sum is differentially private.

The shared library is found when the package is loaded (`__init__`), not at precompilation:
`ENV["DPDIST_LIB"]` if set, else an `Artifacts.toml` artifact, `deps/lib/`, the repository's
`target/release/`, the system search path (see `DpDist.library_candidates`); its ABI version is
checked then.
"""
module DpDist

using Artifacts
using Libdl

export DpDistError, Rng
export gaussian_sigma, distributed_sigma, laplace_scale
export sample_discrete_gaussian, sample_discrete_laplace, sample_gaussian, sample_laplace,
       sample_objective_perturbation
export Accountant, charge_gaussian!, charge_approx!, charge_pure!, charge_zcdp!, spent
export RoundConfig, Client, Node, NodeSum, Aggregator, ReleaseInfo, WireHeader, RoundLedger, admit!, ledger_entries
export config_info, shard, absorb!, retract!, received, finalize_sum, add!, release,
       wire_inspect, simulate_round, dca_simulate_round, node_sum_bytes, node_sum_from_bytes
export ValidityInfo, set_validity!, validity_info, verified_total_delta, simulate_round_verified,
       simulate_round_verified_testing_malicious, DPD_VALIDITY_NONE, DPD_VALIDITY_LINF,
       DPD_VALIDITY_L2
export PlrModel, plr_fit, pst_s_fit, pst_f_fit, pst_h_fit, predict_proba, model_info, model_weights,
       model_intercept, model_ranges, low_level_model, auc
export BlrSettings, BlrModel, CaviInfo, blr_fit, blr_mean, blr_spent, blr_bounds, blr_clipped_share,
       blr_stats,
       blr_predict, blr_fit_non_private, blr_stats_len, blr_record_stats, blr_posterior_mean,
       blr_fit_gamma_prior, blr_search_thresholds, mae, rmse, spearman
export Regression, regression_fit, regression_coefficients, regression_std_errors,
       regression_predict, regression_quality, regression_warnings
export BlrNoiseAware, blr_noise_aware, blr_coefficients, blr_predict_interval,
       effective_sample_size, StatsNoise, blr_stats_noise, blr_noise_aware_from_stats,
       DPD_NOISE_GAUSSIAN, DPD_NOISE_LAPLACE, DPD_BLR_DOF_FROM_RELEASE
export rdp_epsilon, rdp_noise_multiplier, IterativeSettings, IterativeTrainer, StepInfo,
       iterative_fit, iterative_calibrate, step!, fit!, iterative_params, iterative_last_release,
       iterative_predict
export kernel_path, wrapping_add!, wrapping_sub!, kernel_benchmark

include("capi.jl")
include("noise.jl")
include("dca.jl")
include("plr.jl")
include("blr.jl")
include("blr_uncertainty.jl")
include("regression.jl")
include("iterative.jl")
include("kernels.jl")

end # module

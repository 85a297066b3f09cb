/* Registration of the .Call entry points (R looks them up by name, never by dlsym). */
#include <R_ext/Rdynload.h>

#include "dpdist_r.h"

SEXP dpdr_version(void);
SEXP dpdr_abi_version(void);
SEXP dpdr_set_num_threads(SEXP);
SEXP dpdr_num_threads(void);
SEXP dpdr_rng_new_os(void);
SEXP dpdr_rng_new_insecure_fixed_seed(SEXP);
SEXP dpdr_gaussian_sigma_classic(SEXP, SEXP, SEXP);
SEXP dpdr_gaussian_sigma_analytic(SEXP, SEXP, SEXP);
SEXP dpdr_distributed_sigma(SEXP, SEXP, SEXP);
SEXP dpdr_laplace_scale(SEXP, SEXP);
SEXP dpdr_sample_discrete_gaussian(SEXP, SEXP, SEXP);
SEXP dpdr_sample_discrete_laplace(SEXP, SEXP, SEXP);
SEXP dpdr_sample_gaussian(SEXP, SEXP, SEXP);
SEXP dpdr_sample_laplace(SEXP, SEXP, SEXP);
SEXP dpdr_sample_objective_perturbation(SEXP, SEXP, SEXP);
SEXP dpdr_accountant_new(SEXP, SEXP);
SEXP dpdr_accountant_charge_gaussian(SEXP, SEXP, SEXP);
SEXP dpdr_accountant_charge_approx(SEXP, SEXP, SEXP);
SEXP dpdr_accountant_charge_pure(SEXP, SEXP);
SEXP dpdr_accountant_charge_zcdp(SEXP, SEXP);
SEXP dpdr_accountant_spent(SEXP);
SEXP dpdr_round_config_new(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_round_config_info(SEXP);
SEXP dpdr_client_new(SEXP, SEXP, SEXP);
SEXP dpdr_client_shard(SEXP, SEXP);
SEXP dpdr_node_new(SEXP, SEXP);
SEXP dpdr_node_absorb(SEXP, SEXP);
SEXP dpdr_node_retract(SEXP, SEXP);
SEXP dpdr_node_received(SEXP);
SEXP dpdr_node_finalize(SEXP, SEXP);
SEXP dpdr_aggregator_new(SEXP);
SEXP dpdr_aggregator_add(SEXP, SEXP);
SEXP dpdr_aggregator_release(SEXP);
SEXP dpdr_simulate_round(SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_wire_inspect(SEXP);
SEXP dpdr_node_sum_to_bytes(SEXP);
SEXP dpdr_node_sum_from_bytes(SEXP);
SEXP dpdr_plr_fit(SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_pst_s_fit(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_pst_f_fit(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_pst_h_fit(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_plr_predict_proba(SEXP, SEXP);
SEXP dpdr_plr_model_info(SEXP);
SEXP dpdr_plr_model_weights(SEXP);
SEXP dpdr_plr_model_low_level(SEXP, SEXP);
SEXP dpdr_plr_model_from_weights(SEXP, SEXP);
SEXP dpdr_auc(SEXP, SEXP);
SEXP dpdr_blr_fit(SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_blr_model_mean(SEXP);
SEXP dpdr_blr_model_stats(SEXP);
SEXP dpdr_blr_model_spent(SEXP);
SEXP dpdr_blr_model_bounds(SEXP);
SEXP dpdr_blr_predict(SEXP, SEXP);
SEXP dpdr_blr_fit_non_private(SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_blr_record_stats(SEXP, SEXP, SEXP);
SEXP dpdr_blr_posterior_mean(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_blr_fit_gamma_prior(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_blr_search_thresholds(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP dpdr_mae(SEXP, SEXP);
SEXP dpdr_rmse(SEXP, SEXP);
SEXP dpdr_spearman(SEXP, SEXP);
SEXP dpdr_free(SEXP);

static const R_CallMethodDef call_methods[] = {
    {"dpdr_version", (DL_FUNC)&dpdr_version, 0},
    {"dpdr_abi_version", (DL_FUNC)&dpdr_abi_version, 0},
    {"dpdr_set_num_threads", (DL_FUNC)&dpdr_set_num_threads, 1},
    {"dpdr_num_threads", (DL_FUNC)&dpdr_num_threads, 0},
    {"dpdr_rng_new_os", (DL_FUNC)&dpdr_rng_new_os, 0},
    {"dpdr_rng_new_insecure_fixed_seed", (DL_FUNC)&dpdr_rng_new_insecure_fixed_seed, 1},
    {"dpdr_gaussian_sigma_classic", (DL_FUNC)&dpdr_gaussian_sigma_classic, 3},
    {"dpdr_gaussian_sigma_analytic", (DL_FUNC)&dpdr_gaussian_sigma_analytic, 3},
    {"dpdr_distributed_sigma", (DL_FUNC)&dpdr_distributed_sigma, 3},
    {"dpdr_laplace_scale", (DL_FUNC)&dpdr_laplace_scale, 2},
    {"dpdr_sample_discrete_gaussian", (DL_FUNC)&dpdr_sample_discrete_gaussian, 3},
    {"dpdr_sample_discrete_laplace", (DL_FUNC)&dpdr_sample_discrete_laplace, 3},
    {"dpdr_sample_gaussian", (DL_FUNC)&dpdr_sample_gaussian, 3},
    {"dpdr_sample_laplace", (DL_FUNC)&dpdr_sample_laplace, 3},
    {"dpdr_sample_objective_perturbation", (DL_FUNC)&dpdr_sample_objective_perturbation, 3},
    {"dpdr_accountant_new", (DL_FUNC)&dpdr_accountant_new, 2},
    {"dpdr_accountant_charge_gaussian", (DL_FUNC)&dpdr_accountant_charge_gaussian, 3},
    {"dpdr_accountant_charge_approx", (DL_FUNC)&dpdr_accountant_charge_approx, 3},
    {"dpdr_accountant_charge_pure", (DL_FUNC)&dpdr_accountant_charge_pure, 2},
    {"dpdr_accountant_charge_zcdp", (DL_FUNC)&dpdr_accountant_charge_zcdp, 2},
    {"dpdr_accountant_spent", (DL_FUNC)&dpdr_accountant_spent, 1},
    {"dpdr_round_config_new", (DL_FUNC)&dpdr_round_config_new, 9},
    {"dpdr_round_config_info", (DL_FUNC)&dpdr_round_config_info, 1},
    {"dpdr_client_new", (DL_FUNC)&dpdr_client_new, 3},
    {"dpdr_client_shard", (DL_FUNC)&dpdr_client_shard, 2},
    {"dpdr_node_new", (DL_FUNC)&dpdr_node_new, 2},
    {"dpdr_node_absorb", (DL_FUNC)&dpdr_node_absorb, 2},
    {"dpdr_node_retract", (DL_FUNC)&dpdr_node_retract, 2},
    {"dpdr_node_received", (DL_FUNC)&dpdr_node_received, 1},
    {"dpdr_node_finalize", (DL_FUNC)&dpdr_node_finalize, 2},
    {"dpdr_aggregator_new", (DL_FUNC)&dpdr_aggregator_new, 1},
    {"dpdr_aggregator_add", (DL_FUNC)&dpdr_aggregator_add, 2},
    {"dpdr_aggregator_release", (DL_FUNC)&dpdr_aggregator_release, 1},
    {"dpdr_simulate_round", (DL_FUNC)&dpdr_simulate_round, 4},
    {"dpdr_wire_inspect", (DL_FUNC)&dpdr_wire_inspect, 1},
    {"dpdr_node_sum_to_bytes", (DL_FUNC)&dpdr_node_sum_to_bytes, 1},
    {"dpdr_node_sum_from_bytes", (DL_FUNC)&dpdr_node_sum_from_bytes, 1},
    {"dpdr_plr_fit", (DL_FUNC)&dpdr_plr_fit, 5},
    {"dpdr_pst_s_fit", (DL_FUNC)&dpdr_pst_s_fit, 8},
    {"dpdr_pst_f_fit", (DL_FUNC)&dpdr_pst_f_fit, 9},
    {"dpdr_pst_h_fit", (DL_FUNC)&dpdr_pst_h_fit, 13},
    {"dpdr_plr_predict_proba", (DL_FUNC)&dpdr_plr_predict_proba, 2},
    {"dpdr_plr_model_info", (DL_FUNC)&dpdr_plr_model_info, 1},
    {"dpdr_plr_model_weights", (DL_FUNC)&dpdr_plr_model_weights, 1},
    {"dpdr_plr_model_low_level", (DL_FUNC)&dpdr_plr_model_low_level, 2},
    {"dpdr_plr_model_from_weights", (DL_FUNC)&dpdr_plr_model_from_weights, 2},
    {"dpdr_auc", (DL_FUNC)&dpdr_auc, 2},
    {"dpdr_blr_fit", (DL_FUNC)&dpdr_blr_fit, 4},
    {"dpdr_blr_model_mean", (DL_FUNC)&dpdr_blr_model_mean, 1},
    {"dpdr_blr_model_stats", (DL_FUNC)&dpdr_blr_model_stats, 1},
    {"dpdr_blr_model_spent", (DL_FUNC)&dpdr_blr_model_spent, 1},
    {"dpdr_blr_model_bounds", (DL_FUNC)&dpdr_blr_model_bounds, 1},
    {"dpdr_blr_predict", (DL_FUNC)&dpdr_blr_predict, 2},
    {"dpdr_blr_fit_non_private", (DL_FUNC)&dpdr_blr_fit_non_private, 4},
    {"dpdr_blr_record_stats", (DL_FUNC)&dpdr_blr_record_stats, 3},
    {"dpdr_blr_posterior_mean", (DL_FUNC)&dpdr_blr_posterior_mean, 6},
    {"dpdr_blr_fit_gamma_prior", (DL_FUNC)&dpdr_blr_fit_gamma_prior, 6},
    {"dpdr_blr_search_thresholds", (DL_FUNC)&dpdr_blr_search_thresholds, 6},
    {"dpdr_mae", (DL_FUNC)&dpdr_mae, 2},
    {"dpdr_rmse", (DL_FUNC)&dpdr_rmse, 2},
    {"dpdr_spearman", (DL_FUNC)&dpdr_spearman, 2},
    {"dpdr_free", (DL_FUNC)&dpdr_free, 1},
    {NULL, NULL, 0}};

void R_init_dpdist(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}

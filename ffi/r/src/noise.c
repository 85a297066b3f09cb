/* Library information, randomness, calibration, samplers and the privacy accountant. */
#include <math.h>

#include "dpdist_r.h"

SEXP dpdr_version(void) { return Rf_mkString(dpd_version()); }

SEXP dpdr_abi_version(void) { return Rf_ScalarInteger((int)dpd_abi_version()); }

SEXP dpdr_set_num_threads(SEXP n) {
  dpdr_check(dpd_set_num_threads(dpdr_size(n, "n")));
  return R_NilValue;
}

SEXP dpdr_num_threads(void) {
  size_t n = 0;
  dpdr_check(dpd_num_threads(&n));
  return Rf_ScalarReal((double)n);
}

/* ---- randomness ------------------------------------------------------------------------------ */

SEXP dpdr_rng_new_os(void) {
  dpd_rng *rng = NULL;
  dpdr_check(dpd_rng_new_os(&rng));
  return dpdr_wrap(rng, DPDR_RNG);
}

SEXP dpdr_rng_new_insecure_fixed_seed(SEXP seed) {
  uint64_t s = dpdr_u64(seed, "insecure_seed");
  dpd_rng *rng = NULL;
  dpdr_check(dpd_rng_new_insecure_fixed_seed(s, &rng));
  return dpdr_wrap(rng, DPDR_RNG);
}

/* ---- calibration ----------------------------------------------------------------------------- */

SEXP dpdr_gaussian_sigma_classic(SEXP eps, SEXP delta, SEXP l2) {
  double out = 0;
  dpdr_check(dpd_gaussian_sigma_classic(dpdr_double(eps, "epsilon"), dpdr_double(delta, "delta"),
                                        dpdr_double(l2, "l2_sensitivity"), &out));
  return Rf_ScalarReal(out);
}

SEXP dpdr_gaussian_sigma_analytic(SEXP eps, SEXP delta, SEXP l2) {
  double out = 0;
  dpdr_check(dpd_gaussian_sigma_analytic(dpdr_double(eps, "epsilon"),
                                         dpdr_double(delta, "delta"),
                                         dpdr_double(l2, "l2_sensitivity"), &out));
  return Rf_ScalarReal(out);
}

SEXP dpdr_distributed_sigma(SEXP sigma_total, SEXP n, SEXP t) {
  double out = 0;
  dpdr_check(dpd_distributed_sigma(dpdr_double(sigma_total, "sigma_total"),
                                   dpdr_size(n, "n_clients"), dpdr_size(t, "max_dropped"),
                                   &out));
  return Rf_ScalarReal(out);
}

SEXP dpdr_laplace_scale(SEXP eps, SEXP l1) {
  double out = 0;
  dpdr_check(dpd_laplace_scale(dpdr_double(eps, "epsilon"), dpdr_double(l1, "l1_sensitivity"),
                               &out));
  return Rf_ScalarReal(out);
}

/* ---- samplers -------------------------------------------------------------------------------- */

/* Integer samples come back as doubles; beyond 2^53 they would not be exact, so refuse. */
static SEXP int64s_to_r(const int64_t *v, size_t n) {
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
  for (size_t i = 0; i < n; i++) {
    if (v[i] > INT64_C(9007199254740992) || v[i] < -INT64_C(9007199254740992))
      dpdr_fail("DPD_ERR_OVERFLOW", "a sample exceeds 2^53 in magnitude and has no exact R double");
    REAL(out)[i] = (double)v[i];
  }
  UNPROTECT(1);
  return out;
}

typedef dpd_status (*int_sampler)(dpd_rng *, double, int64_t *, size_t);
typedef dpd_status (*real_sampler)(dpd_rng *, double, double *, size_t);

static SEXP sample_ints(int_sampler f, SEXP rng, SEXP param, const char *pname, SEXP n) {
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  double p = dpdr_double(param, pname);
  size_t len = dpdr_size(n, "n");
  int64_t *buf = (int64_t *)R_alloc(len > 0 ? len : 1, sizeof(int64_t));
  dpdr_check(f(r, p, len > 0 ? buf : NULL, len));
  return int64s_to_r(buf, len);
}

static SEXP sample_reals(real_sampler f, SEXP rng, SEXP param, const char *pname, SEXP n) {
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  double p = dpdr_double(param, pname);
  size_t len = dpdr_size(n, "n");
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)len));
  dpdr_check(f(r, p, len > 0 ? REAL(out) : NULL, len));
  UNPROTECT(1);
  return out;
}

SEXP dpdr_sample_discrete_gaussian(SEXP rng, SEXP sigma_units, SEXP n) {
  return sample_ints(dpd_sample_discrete_gaussian, rng, sigma_units, "sigma_units", n);
}

SEXP dpdr_sample_discrete_laplace(SEXP rng, SEXP scale_units, SEXP n) {
  return sample_ints(dpd_sample_discrete_laplace, rng, scale_units, "scale_units", n);
}

SEXP dpdr_sample_gaussian(SEXP rng, SEXP sigma, SEXP n) {
  return sample_reals(dpd_sample_gaussian, rng, sigma, "sigma", n);
}

SEXP dpdr_sample_laplace(SEXP rng, SEXP scale, SEXP n) {
  return sample_reals(dpd_sample_laplace, rng, scale, "scale", n);
}

SEXP dpdr_sample_objective_perturbation(SEXP rng, SEXP epsilon_prime, SEXP d) {
  return sample_reals(dpd_sample_objective_perturbation, rng, epsilon_prime, "epsilon_prime", d);
}

/* ---- accountant ------------------------------------------------------------------------------ */

SEXP dpdr_accountant_new(SEXP eps, SEXP delta) {
  dpd_accountant *acc = NULL;
  dpdr_check(dpd_accountant_new(dpdr_double(eps, "epsilon"), dpdr_double(delta, "delta"), &acc));
  return dpdr_wrap(acc, DPDR_ACCOUNTANT);
}

static dpd_accountant *acc_of(SEXP x) {
  return (dpd_accountant *)dpdr_handle(x, DPDR_ACCOUNTANT, "accountant");
}

SEXP dpdr_accountant_charge_gaussian(SEXP acc, SEXP l2, SEXP sigma) {
  dpd_accountant *a = acc_of(acc);
  dpdr_check(dpd_accountant_charge_gaussian(a, dpdr_double(l2, "l2_sensitivity"),
                                            dpdr_double(sigma, "sigma")));
  return R_NilValue;
}

SEXP dpdr_accountant_charge_approx(SEXP acc, SEXP eps, SEXP delta) {
  dpd_accountant *a = acc_of(acc);
  dpdr_check(dpd_accountant_charge_approx(a, dpdr_double(eps, "epsilon"),
                                          dpdr_double(delta, "delta")));
  return R_NilValue;
}

SEXP dpdr_accountant_charge_pure(SEXP acc, SEXP eps) {
  dpd_accountant *a = acc_of(acc);
  dpdr_check(dpd_accountant_charge_pure(a, dpdr_double(eps, "epsilon")));
  return R_NilValue;
}

SEXP dpdr_accountant_charge_zcdp(SEXP acc, SEXP rho) {
  dpd_accountant *a = acc_of(acc);
  dpdr_check(dpd_accountant_charge_zcdp(a, dpdr_double(rho, "rho")));
  return R_NilValue;
}

SEXP dpdr_accountant_spent(SEXP acc) {
  double eps = 0, delta = 0;
  size_t rounds = 0;
  dpdr_check(dpd_accountant_spent(acc_of(acc), &eps, &delta, &rounds));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 3));
  REAL(out)[0] = eps;
  REAL(out)[1] = delta;
  REAL(out)[2] = (double)rounds;
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 3));
  SET_STRING_ELT(names, 0, Rf_mkChar("epsilon"));
  SET_STRING_ELT(names, 1, Rf_mkChar("delta"));
  SET_STRING_ELT(names, 2, Rf_mkChar("rounds"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

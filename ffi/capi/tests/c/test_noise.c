/* dp-noise through the C ABI: calibration against the formulas (computed here in C), samplers
 * against their distributions (fixed seeds; every bound is >= 6 standard errors, so a false
 * failure has probability < 1e-8), the accountant's refusal, and a noisy DCA round. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static double phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* delta(sigma) of the Gaussian mechanism (Balle & Wang 2018, Thm 8). */
static double analytic_delta(double eps, double sens, double sigma) {
    double a = sens / (2.0 * sigma), b = eps * sigma / sens;
    return phi(a - b) - exp(eps) * phi(-a - b);
}

static void calibration(void) {
    double s = 0.0;
    CHECK_OK(dpd_gaussian_sigma_classic(0.5, 1e-5, 1.0, &s));
    /* sqrt(2 ln(1.25/1e-5)) / 0.5 = sqrt(2 * 11.736069) / 0.5 = 9.689610... */
    CHECK(fabs(s - sqrt(2.0 * log(1.25e5)) / 0.5) < 1e-9);
    double untouched = -1.0;
    CHECK_FAILS(dpd_gaussian_sigma_classic(1.5, 1e-5, 1.0, &untouched), DPD_ERR_INVALID_ARGUMENT,
                "analytic");
    CHECK_FAILS(dpd_gaussian_sigma_classic(0.5, 0.0, 1.0, &untouched),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "delta");
    CHECK_FAILS(dpd_gaussian_sigma_classic(NAN, 1e-5, 1.0, &untouched),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK_FAILS(dpd_gaussian_sigma_classic(0.5, 1e-5, 1.0, NULL), DPD_ERR_NULL_POINTER, "`out`");
    CHECK(untouched == -1.0);

    /* Analytic: the smallest sigma meeting delta, for eps >= 1 too. */
    const double eps[3] = {0.5, 1.0, 4.0};
    for (int i = 0; i < 3; i++) {
        double a = 0.0;
        CHECK_OK(dpd_gaussian_sigma_analytic(eps[i], 1e-6, 2.0, &a));
        CHECK(analytic_delta(eps[i], 2.0, a) <= 1e-6 * (1.0 + 1e-9));
        CHECK(analytic_delta(eps[i], 2.0, a * 0.999) > 1e-6);
    }
    double a = 0.0;
    CHECK_OK(dpd_gaussian_sigma_analytic(0.5, 1e-5, 1.0, &a));
    CHECK(a < s); /* tighter than the classic bound */

    CHECK_OK(dpd_distributed_sigma(10.0, 10, 2, &s));
    CHECK(fabs(s - 10.0 / sqrt(7.0)) < 1e-12);
    CHECK_FAILS(dpd_distributed_sigma(10.0, 3, 2, &s), DPD_ERR_INVALID_ARGUMENT, "N - T - 1");
    CHECK_OK(dpd_laplace_scale(0.5, 2.0, &s));
    CHECK(fabs(s - 4.0) < 1e-15);
}

static void moments(const double *x, size_t n, double *mean, double *var) {
    double m = 0.0, v = 0.0;
    for (size_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (size_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *var = v / (double)(n - 1);
}

enum { S = 20000 };

static void samplers(void) {
    static int64_t z[S], z2[S];
    static double x[S];
    dpd_rng *rng = NULL, *same = NULL;
    double mean, var;

    /* Discrete Gaussian sigma = 3: mean 0 (se 0.021), variance 9 (se ~0.09). */
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(11, &rng));
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(11, &same));
    CHECK_OK(dpd_sample_discrete_gaussian(rng, 3.0, z, S));
    CHECK_OK(dpd_sample_discrete_gaussian(same, 3.0, z2, S));
    CHECK(memcmp(z, z2, sizeof z) == 0); /* reproducible with the insecure seed */
    for (size_t i = 0; i < S; i++) x[i] = (double)z[i];
    moments(x, S, &mean, &var);
    CHECK(fabs(mean) < 6.0 * 3.0 / sqrt(S));
    CHECK(fabs(var - 9.0) < 6.0 * 9.0 * sqrt(2.0 / S));
    CHECK_OK(dpd_sample_discrete_gaussian(rng, 3.0, z2, S)); /* next call: a new stream */
    CHECK(memcmp(z, z2, sizeof z) != 0);
    int64_t keep = z[0];
    CHECK_FAILS(dpd_sample_discrete_gaussian(rng, -1.0, z, S), DPD_ERR_INVALID_ARGUMENT, "sigma");
    CHECK(z[0] == keep);
    CHECK_FAILS(dpd_sample_discrete_gaussian(NULL, 3.0, z, S), DPD_ERR_NULL_POINTER, "`rng`");
    CHECK_FAILS(dpd_sample_discrete_gaussian(rng, 3.0, NULL, S), DPD_ERR_NULL_POINTER, "`out`");

    /* Discrete Laplace b = 2: variance 2e^{-1/b}/(1 - e^{-1/b})^2 = 7.8353...; the standard error
     * of the sample variance is < 0.13 (continuous Laplace fourth moment 24 b^4). */
    CHECK_OK(dpd_sample_discrete_laplace(rng, 2.0, z, S));
    for (size_t i = 0; i < S; i++) x[i] = (double)z[i];
    moments(x, S, &mean, &var);
    double q = exp(-0.5);
    CHECK(fabs(mean) < 6.0 * sqrt(7.84 / S));
    CHECK(fabs(var - 2.0 * q / ((1.0 - q) * (1.0 - q))) < 8.0 * 0.13);

    /* Gaussian sigma = 1.5. */
    CHECK_OK(dpd_sample_gaussian(rng, 1.5, x, S));
    moments(x, S, &mean, &var);
    CHECK(fabs(mean) < 6.0 * 1.5 / sqrt(S));
    CHECK(fabs(var - 2.25) < 6.0 * 2.25 * sqrt(2.0 / S));
    double first = x[0];
    CHECK_FAILS(dpd_sample_gaussian(rng, INFINITY, x, S), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "sigma");
    CHECK(x[0] == first);

    /* Laplace b = 2: variance 8, sd of the sample variance sqrt((24 b^4 - 64)/S) = 0.126. */
    CHECK_OK(dpd_sample_laplace(rng, 2.0, x, S));
    moments(x, S, &mean, &var);
    CHECK(fabs(mean) < 6.0 * sqrt(8.0 / S));
    CHECK(fabs(var - 8.0) < 6.0 * 0.1265);

    /* Objective perturbation, d = 3, eps' = 1: |b| ~ Gamma(3, 2) (mean 6, variance 12); the
     * direction is uniform, so each coordinate has mean 0 and variance E|b|^2/3 = 16. */
    enum { K = 2000 };
    double norm[K], first_coord[K], b[3];
    for (size_t k = 0; k < K; k++) {
        CHECK_OK(dpd_sample_objective_perturbation(rng, 1.0, b, 3));
        norm[k] = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
        first_coord[k] = b[0];
    }
    moments(norm, K, &mean, &var);
    CHECK(fabs(mean - 6.0) < 6.0 * sqrt(12.0 / K));
    moments(first_coord, K, &mean, &var);
    CHECK(fabs(mean) < 6.0 * 4.0 / sqrt(K));
    CHECK_FAILS(dpd_sample_objective_perturbation(rng, 0.0, b, 3),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");

    /* The OS generator works and is not the fixed seed's stream. */
    dpd_rng *os = NULL;
    CHECK_OK(dpd_rng_new_os(&os));
    CHECK_OK(dpd_sample_discrete_gaussian(os, 3.0, z2, S));
    CHECK(memcmp(z, z2, sizeof z) != 0);
    dpd_rng_free(os);
    dpd_rng_free(same);
    dpd_rng_free(rng);
}

/* The documented ranges (header "Privacy parameters"; README): each violation is
 * DPD_ERR_INVALID_PRIVACY_PARAMETER with the range in the message, and writes nothing. */
static void privacy_ranges(void) {
    double out = -1.0;
    CHECK_FAILS(dpd_gaussian_sigma_analytic(1e6, 0.5, 1.0, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "[1e-6, 100]");
    CHECK_FAILS(dpd_gaussian_sigma_analytic(1.0, 0.5, 1.0, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "0.01");
    CHECK_FAILS(dpd_gaussian_sigma_analytic(1.0, 0.011, 1.0, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "delta");
    CHECK_FAILS(dpd_gaussian_sigma_analytic(1.0, 4.9e-324, 1.0, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "delta");
    CHECK_FAILS(dpd_gaussian_sigma_analytic(1.0, 1e-5, 1e-300, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "[1e-12, 1e12]");
    CHECK_FAILS(dpd_gaussian_sigma_analytic(1.0, 1e-5, 4.9e-324, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "l2_sensitivity");
    CHECK_FAILS(dpd_gaussian_sigma_classic(0.5, 1e-5, 1e13, &out),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "l2_sensitivity");
    CHECK_FAILS(dpd_laplace_scale(0.0, 1.0, &out), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "epsilon");
    CHECK_FAILS(dpd_laplace_scale(1.0, INFINITY, &out), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "l1_sensitivity");
    CHECK_FAILS(dpd_distributed_sigma(1e-300, 10, 2, &out), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "sigma_total");
    CHECK(out == -1.0);
    /* The edges themselves are accepted. */
    CHECK_OK(dpd_gaussian_sigma_analytic(DPD_EPSILON_MAX, DPD_DELTA_MAX, DPD_SENSITIVITY_MIN,
                                         &out));
    CHECK(out >= DPD_SIGMA_MIN);
    CHECK_OK(dpd_gaussian_sigma_classic(DPD_EPSILON_MIN, DPD_DELTA_MIN, DPD_SENSITIVITY_MAX,
                                        &out));
    CHECK(out <= DPD_SIGMA_MAX);

    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(3, &rng));
    double samples[4] = {7, 7, 7, 7};
    CHECK_FAILS(dpd_sample_gaussian(rng, -1.0, samples, 4), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "sigma");
    CHECK_FAILS(dpd_sample_laplace(rng, NAN, samples, 4), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "scale");
    CHECK_FAILS(dpd_sample_objective_perturbation(rng, 1e9, samples, 4),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon_prime");
    CHECK(samples[0] == 7 && samples[3] == 7);
    dpd_rng_free(rng);

    dpd_round_config *config = (dpd_round_config *)0x1;
    CHECK_FAILS(dpd_round_config_new(1, 10, 2, 1, 3, 1.0, DPD_SHARE_MODE_SEED, 1e-300,
                                     DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "noise_sigma_total");
    CHECK_FAILS(dpd_round_config_new(1, 10, 2, 1, 3, 1.0, DPD_SHARE_MODE_SEED, NAN,
                                     DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "noise_sigma_total");
    /* sigma = 0 (what a caller ignoring a failed calibration passes), negative or NaN never
     * gives a round without noise: the error names the explicitly NON-PRIVATE constructor. */
    double failed_sigma = 0.0;
    CHECK_FAILS(dpd_gaussian_sigma_analytic(0.0, 1e-5, 1.0, &failed_sigma),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK(failed_sigma == 0.0);
    CHECK_FAILS(dpd_round_config_new(1, 10, 2, 1, 3, 1.0, DPD_SHARE_MODE_SEED, failed_sigma,
                                     DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "dpd_round_config_new_exact");
    CHECK_FAILS(dpd_round_config_new(1, 10, 2, 1, 3, 1.0, DPD_SHARE_MODE_SEED, -1.0,
                                     DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "NON-PRIVATE");
    CHECK(config == (dpd_round_config *)0x1);

    dpd_accountant *acc = (dpd_accountant *)0x1;
    CHECK_FAILS(dpd_accountant_new(1.0, 0.5, &acc), DPD_ERR_INVALID_PRIVACY_PARAMETER, "0.01");
    CHECK_FAILS(dpd_accountant_new(0.0, 1e-5, &acc), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "costs nothing");
    CHECK(acc == (dpd_accountant *)0x1);
    CHECK_OK(dpd_accountant_new(1.0, 0.0, &acc)); /* a pure ε budget */
    dpd_accountant_free(acc);
}

static void accountant(void) {
    dpd_accountant *acc = (dpd_accountant *)0x1;
    CHECK_FAILS(dpd_accountant_new(NAN, 1e-5, &acc), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "epsilon");
    CHECK_FAILS(dpd_accountant_new(1.0, 1.5, &acc), DPD_ERR_INVALID_PRIVACY_PARAMETER, "delta");
    CHECK(acc == (dpd_accountant *)0x1);
    CHECK_OK(dpd_accountant_new(1.0, 1e-5, &acc));
    CHECK_OK(dpd_accountant_charge_pure(acc, 0.4));
    CHECK_OK(dpd_accountant_charge_pure(acc, 0.4));
    CHECK_FAILS(dpd_accountant_charge_pure(acc, 0.4), DPD_ERR_BUDGET_EXCEEDED, "nothing was spent");
    CHECK_FAILS(dpd_accountant_charge_approx(acc, -1.0, 0.0), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "epsilon");
    double eps = -1.0, delta = -1.0;
    size_t rounds = 0;
    CHECK_OK(dpd_accountant_spent(acc, &eps, &delta, &rounds));
    CHECK(fabs(eps - 0.8) < 1e-12 && delta == 0.0 && rounds == 2);

    /* A Gaussian round, Delta = 1, sigma = 40: mu = 1/40, converted exactly with delta' = 1e-5:
     * the smallest eps with Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) <= 1e-5 is
     * 0.0749416871978764 (mpmath, 50 digits, bisection); eps = 0.8 + that. */
    CHECK_OK(dpd_accountant_charge_gaussian(acc, 1.0, 40.0));
    CHECK_OK(dpd_accountant_spent(acc, &eps, &delta, NULL));
    CHECK(fabs(eps - (0.8 + 0.0749416871978764)) < 1e-11);
    CHECK(delta == 1e-5);
    /* sigma = 1 would cost rho = 0.5: far over budget, refused, nothing changes. */
    CHECK_FAILS(dpd_accountant_charge_gaussian(acc, 1.0, 1.0), DPD_ERR_BUDGET_EXCEEDED, "budget");
    double eps_after = 0.0;
    CHECK_OK(dpd_accountant_spent(acc, &eps_after, NULL, &rounds));
    CHECK(eps_after == eps && rounds == 3);
    CHECK_FAILS(dpd_accountant_charge_zcdp(NULL, 0.1), DPD_ERR_NULL_POINTER, "`accountant`");
    /* A round that costs nothing is refused, not counted. */
    CHECK_FAILS(dpd_accountant_charge_pure(acc, 0.0), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "costs nothing");
    CHECK_FAILS(dpd_accountant_charge_zcdp(acc, 0.0), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "costs nothing");
    CHECK_FAILS(dpd_accountant_charge_approx(acc, 0.0, 0.0), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "costs nothing");
    /* sigma = infinity would be a Gaussian round that costs nothing (mu = 0). */
    CHECK_FAILS(dpd_accountant_charge_gaussian(acc, 1.0, INFINITY),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "[1e-15, 1e20]");
    CHECK_FAILS(dpd_accountant_charge_gaussian(acc, 1e-300, 1.0),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "[1e-12, 1e12]");
    CHECK_OK(dpd_accountant_spent(acc, NULL, NULL, &rounds));
    CHECK(rounds == 3);
    dpd_accountant_free(acc);

    /* One round calibrated by the analytic Gaussian for (1, 1e-5) costs exactly eps = 1 (it cost
     * 1.32 through zCDP); the zCDP accountant keeps the older, looser composition. */
    double sigma = 0.0;
    CHECK_OK(dpd_gaussian_sigma_analytic(1.0, 1e-5, 1.0, &sigma));
    CHECK_OK(dpd_accountant_new(1.0, 1e-5, &acc));
    CHECK_OK(dpd_accountant_charge_gaussian(acc, 1.0, sigma));
    CHECK_OK(dpd_accountant_spent(acc, &eps, NULL, NULL));
    CHECK(eps <= 1.0 && eps > 1.0 - 1e-9);
    dpd_accountant_free(acc);
    CHECK_OK(dpd_accountant_new_zcdp(2.0, 1e-5, &acc));
    CHECK_OK(dpd_accountant_charge_gaussian(acc, 1.0, sigma));
    CHECK_OK(dpd_accountant_spent(acc, &eps, NULL, NULL));
    double rho = 1.0 / (2.0 * sigma * sigma);
    CHECK(fabs(eps - (rho + 2.0 * sqrt(rho * log(1e5)))) < 1e-12 && eps > 1.3);
    dpd_accountant_free(acc);
}

/* Noisy DCA: 100 simulated rounds of N = 50 clients (T = 5); the released sum minus the plain
 * sum must have the configured spread sigma_client * sqrt(n_included). */
static void noisy_rounds(void) {
    enum { N = 50, T = 5, D = 4, R = 100 };
    const double sigma_total = 2.0;
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new(9, N, 3, T, D, 1.0, DPD_SHARE_MODE_SEED, sigma_total,
                                  DPD_FRAC_BITS_AUTO, &config));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(5, &rng));
    static double inputs[N * D], errors[R * D];
    double plain[D] = {0};
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < D; j++) {
            inputs[i * D + j] = sin((double)(i * D + j));
            if (i != 7) plain[j] += inputs[i * D + j];
        }
    const uint64_t dropped[1] = {7};
    dpd_release_info info;
    for (size_t r = 0; r < R; r++) {
        double sum[D];
        size_t len = 0;
        CHECK_OK(dpd_simulate_round(config, inputs, N * D, dropped, 1, rng, sum, D, &len, &info));
        for (size_t j = 0; j < D; j++) errors[r * D + j] = sum[j] - plain[j];
    }
    double sigma_client = sigma_total / sqrt((double)(N - T - 1));
    CHECK(fabs(info.noise_sigma_client - sigma_client) < 1e-12);
    CHECK(info.n_included == N - 1);
    double sigma = sigma_client * sqrt((double)(N - 1));
    CHECK(fabs(info.noise_sigma_released - sigma) < 1e-12);
    double mean, var;
    moments(errors, R * D, &mean, &var);
    CHECK(fabs(mean) < 6.0 * sigma / sqrt((double)(R * D)));
    CHECK(fabs(var / (sigma * sigma) - 1.0) < 6.0 * sqrt(2.0 / (R * D)));
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

int main(void) {
    calibration();
    samplers();
    privacy_ranges();
    accountant();
    noisy_rounds();
    return check_exit("test_noise");
}

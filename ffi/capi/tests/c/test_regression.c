/* The regression on real data from C: y = 20 + 0.8 age + 0.5 hours (+ skewed noise) in the data's
 * units, compared with least squares solved here; a prediction; the fit quality and the budget
 * spent; bad ranges refused with nothing made. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 20000, D = 2 };

static double uniform(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

int main(void) {
    static double x[N * D], y[N];
    uint64_t s = 99;
    for (size_t i = 0; i < N; i++) {
        x[i * D] = 18.0 + 62.0 * uniform(&s);
        x[i * D + 1] = 60.0 * uniform(&s);
        y[i] = 20.0 + 0.8 * x[i * D] + 0.5 * x[i * D + 1] - 15.0 * log(1.0 - uniform(&s));
    }
    /* Least squares with an intercept, by the normal equations of (1, age, hours). */
    double a[3][4] = {{0}};
    for (size_t i = 0; i < N; i++) {
        double z[3] = {1.0, x[i * D], x[i * D + 1]};
        for (int j = 0; j < 3; j++) {
            for (int k = 0; k < 3; k++) a[j][k] += z[j] * z[k];
            a[j][3] += z[j] * y[i];
        }
    }
    for (int p = 0; p < 3; p++)
        for (int r = p + 1; r < 3; r++) {
            double f = a[r][p] / a[p][p];
            for (int c = p; c < 4; c++) a[r][c] -= f * a[p][c];
        }
    double ols[3];
    for (int p = 3; p-- > 0;) {
        double v = a[p][3];
        for (int c = p + 1; c < 3; c++) v -= a[p][c] * ols[c];
        ols[p] = v / a[p][p];
    }

    const double lower[D] = {18.0, 0.0}, upper[D] = {80.0, 60.0};
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(11, &rng));
    dpd_regression *fit = NULL;
    CHECK_OK(dpd_regression_fit(x, N * D, y, N, lower, upper, D, 0.0, 350.0, 1, 1.0, 1e-5, 3,
                                rng, &fit));
    double coef[D + 1], se[D + 1];
    size_t len = 0;
    CHECK(dpd_regression_coefficients(fit, coef, 1, &len) == DPD_ERR_BUFFER_TOO_SMALL);
    CHECK(len == D + 1);
    CHECK_OK(dpd_regression_coefficients(fit, coef, D + 1, &len));
    CHECK_OK(dpd_regression_std_errors(fit, se, D + 1, &len));
    CHECK(fabs(coef[1] - ols[1]) < 0.05 && fabs(coef[2] - ols[2]) < 0.05);
    CHECK(fabs(coef[0] - ols[0]) < 3.0);
    for (int j = 0; j <= D; j++) CHECK(se[j] > 0.0 && se[j] < 5.0);
    const double row[D] = {40.0, 38.0};
    double pred = 0.0;
    CHECK_OK(dpd_regression_predict(fit, row, D, &pred, 1, &len));
    CHECK(fabs(pred - (ols[0] + 40.0 * ols[1] + 38.0 * ols[2])) < 3.0);
    double r2 = 0.0, constant = 0.0, eps = 0.0, delta = 0.0;
    CHECK_OK(dpd_regression_fit_quality(fit, &r2, &constant, NULL));
    CHECK(r2 > 0.5 && r2 < 1.0);
    CHECK_OK(dpd_regression_spent(fit, &eps, &delta));
    CHECK(eps <= 1.0 && eps > 0.99 && delta <= 1e-5);
    char warnings[8];
    CHECK_OK(dpd_regression_warnings(fit, (uint8_t *)warnings, sizeof warnings, &len));
    CHECK(len == 0);
    dpd_regression_free(fit);

    /* A reversed range: refused, nothing made. */
    const double reversed[D] = {80.0, 60.0};
    fit = NULL;
    CHECK(dpd_regression_fit(x, N * D, y, N, reversed, lower, D, 0.0, 350.0, 1, 1.0, 1e-5, 0,
                             rng, &fit) == DPD_ERR_INVALID_ARGUMENT);
    CHECK(fit == NULL);
    CHECK(strstr(last_error(), "range") != NULL);
    dpd_regression_free(NULL);
    dpd_rng_free(rng);
    return check_exit("test_regression");
}

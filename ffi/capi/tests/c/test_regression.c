/* The regression on real data from C: y = 20 + 0.8 age + 0.5 hours (+ skewed noise) in the data's
 * units, compared with least squares solved here; a prediction; the fit quality and the budget
 * spent; bad ranges refused with nothing made. Then a categorical variable of 6 levels as an
 * indicator group (dpd_regression_fit_grouped): its level effects, and a row with two levels set
 * or a grouped column whose range is not [0, 1] refused with the cause named and nothing made. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 20000, D = 2 };

static double uniform(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* y = 10 + 0.5 hours + 4·level (+ skewed noise); level 0 is the reference, levels 1..5 are
 * indicator columns 1..5, declared as one group labelled 7 (any label will do). */
enum { NG = 20000, DG = 6, LEVELS = 6 };

static void grouped(dpd_rng *rng) {
    static double x[NG * DG], y[NG];
    uint64_t s = 7;
    for (size_t i = 0; i < NG; i++) {
        double *row = &x[i * DG];
        row[0] = 60.0 * uniform(&s);
        int level = (int)(LEVELS * uniform(&s));
        for (int l = 1; l < LEVELS; l++) row[l] = level == l ? 1.0 : 0.0;
        y[i] = 10.0 + 0.5 * row[0] + 4.0 * level - 10.0 * log(1.0 - uniform(&s));
    }
    const double lower[DG] = {0, 0, 0, 0, 0, 0}, upper[DG] = {60, 1, 1, 1, 1, 1};
    const uint32_t group_of[DG] = {0, 7, 7, 7, 7, 7};
    dpd_regression *fit = NULL;
    CHECK_OK(dpd_regression_fit_grouped(x, NG * DG, y, NG, lower, upper, group_of, DG, 0.0, 200.0,
                                        1, 1.0, 1e-5, 0, rng, &fit));
    double coef[DG + 1];
    size_t len = 0;
    CHECK_OK(dpd_regression_coefficients(fit, coef, DG + 1, &len));
    CHECK(len == DG + 1);
    CHECK(fabs(coef[1] - 0.5) < 0.1);
    for (int l = 1; l < LEVELS; l++) CHECK(fabs(coef[1 + l] - 4.0 * l) < 2.5);
    const double row[DG] = {30, 0, 0, 1, 0, 0};
    double pred = 0.0;
    CHECK_OK(dpd_regression_predict(fit, row, DG, &pred, 1, &len));
    CHECK(fabs(pred - (10.0 + 15.0 + 12.0 + 10.0)) < 4.0); /* level 3; + E[noise] = 10 */
    dpd_regression_free(fit);

    /* Row 5 sets levels 2 and 3: refused, the group's label and the row named, nothing made. */
    x[5 * DG + 2] = 1.0, x[5 * DG + 3] = 1.0;
    fit = NULL;
    CHECK_FAILS(dpd_regression_fit_grouped(x, NG * DG, y, NG, lower, upper, group_of, DG, 0.0,
                                           200.0, 1, 1.0, 1e-5, 0, rng, &fit),
                DPD_ERR_INVALID_ARGUMENT, "indicator group 7");
    CHECK(fit == NULL);
    CHECK(strstr(last_error(), "row 5") != NULL && strstr(last_error(), "both 1") != NULL);
    /* Ungrouped, the same rows are just numbers: dpd_regression_fit keeps its behaviour. */
    CHECK_OK(dpd_regression_fit(x, NG * DG, y, NG, lower, upper, DG, 0.0, 200.0, 1, 1.0, 1e-5, 0,
                                rng, &fit));
    dpd_regression_free(fit);
    x[5 * DG + 2] = 0.0, x[5 * DG + 3] = 0.0;

    /* A grouped column (hours) whose range is not [0, 1]. */
    const uint32_t bad_group[DG] = {7, 7, 7, 7, 7, 7};
    fit = NULL;
    CHECK_FAILS(dpd_regression_fit_grouped(x, NG * DG, y, NG, lower, upper, bad_group, DG, 0.0,
                                           200.0, 1, 1.0, 1e-5, 0, rng, &fit),
                DPD_ERR_INVALID_ARGUMENT, "an indicator's is [0, 1]");
    CHECK(fit == NULL);
    /* NULL group_of: no groups, as dpd_regression_fit. */
    CHECK_OK(dpd_regression_fit_grouped(x, NG * DG, y, NG, lower, upper, NULL, DG, 0.0, 200.0, 1,
                                        1.0, 1e-5, 0, rng, &fit));
    dpd_regression_free(fit);
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
    grouped(rng);
    dpd_rng_free(rng);
    return check_exit("test_regression");
}

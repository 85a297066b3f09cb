# The regression on real data through the C library: coefficients in the data's units against
# base R's lm on skewed, offset data, factors as indicators (a factor of 7 levels as one indicator
# group, declared by blr_lm itself), predict/confint/summary, the
# warning of a fit no better than the constant, and refusals that name their cause.
source("helpers.R")

# Wages in $1000 (skewed), age in years, a two-level factor; R's generator makes the DATA only.
make_data <- function(n, seed) {
  set.seed(seed)
  df <- data.frame(age = runif(n, 18, 80), sector = factor(sample(c("a", "b"), n, TRUE)))
  df$wage <- pmin(20 + 0.8 * df$age + 10 * (df$sector == "b") + rexp(n, 1 / 15), 350)
  df
}
ranges <- list(wage = c(0, 350), age = c(18, 80))

run_tests(list(
  coefficients_come_back_in_the_datas_units_near_lm = function() {
    df <- make_data(20000, 1)
    fit <- blr_lm(wage ~ age + sector, df, ranges, epsilon = 1,
                  rng = dpdist_rng(insecure_seed = 3))
    ols <- coef(lm(wage ~ age + sector, df))
    b <- coef(fit)
    stopifnot(identical(names(b), names(ols)))
    expect_near(b[["age"]], ols[["age"]], 0.1)
    expect_near(b[["sectorb"]], ols[["sectorb"]], 2)
    expect_near(b[["(Intercept)"]], ols[["(Intercept)"]], 5)
    ci <- confint(fit)
    stopifnot(all(ci[, 1] < b), all(b < ci[, 2]), identical(dim(ci), c(3L, 2L)))
    p <- predict(fit, data.frame(age = c(30, 60), sector = c("a", "b")))
    expect_near(p, drop(cbind(1, c(30, 60), c(0, 1)) %*% ols), 3)
    s <- summary(fit)
    stopifnot(s$r_squared > 0.3, length(s$warnings) == 0, s$spent[["epsilon"]] <= 1)
    out <- capture.output(print(s))
    stopifnot(any(grepl("DP R-squared", out)), any(grepl("Privacy spent", out)))
  },

  a_factor_of_many_levels_is_one_indicator_group_with_a_coefficient_per_level = function() {
    set.seed(7)
    n <- 50000
    df <- data.frame(age = runif(n, 18, 80),
                     region = factor(sample(paste0("r", 1:7), n, TRUE)),
                     sector = factor(sample(c("a", "b"), n, TRUE)))
    effect <- c(r1 = 0, r2 = 5, r3 = 10, r4 = 15, r5 = 20, r6 = 25, r7 = 30)
    df$wage <- pmin(20 + 0.8 * df$age + effect[as.character(df$region)] +
                      5 * (df$sector == "b") + rexp(n, 1 / 15), 350)
    fit <- blr_lm(wage ~ age + region + sector, df, ranges, epsilon = 1,
                  rng = dpdist_rng(insecure_seed = 8))
    # The 6 indicators of region form one group, sector's one indicator another; age none.
    stopifnot(identical(fit$groups, c(0L, rep(2L, 6), 3L)))
    ols <- coef(lm(wage ~ age + region + sector, df))
    b <- coef(fit)
    levels <- paste0("region", paste0("r", 2:7))
    stopifnot(identical(names(b), names(ols)), all(levels %in% names(b)))
    # Each level's effect is measured against the reference level, whose DP mean shifts them
    # all alike (as the intercept, which the first test allows 5); their differences do not.
    expect_near(b[levels], ols[levels], 5)
    expect_near(b[levels] - b[[levels[1]]], ols[levels] - ols[[levels[1]]], 2.5)
    expect_near(b[["age"]], ols[["age"]], 0.1)
    new <- data.frame(age = c(30, 60), region = c("r1", "r7"), sector = c("a", "b"))
    p <- predict(fit, new)
    expect_near(p, unname(predict(lm(wage ~ age + region + sector, df), new)), 5)
  },

  a_fit_that_is_no_better_than_the_constant_warns = function() {
    set.seed(2)
    df <- data.frame(age = runif(300, 18, 80))
    df$wage <- runif(300, 0, 350)
    w <- NULL
    fit <- withCallingHandlers(
      blr_lm(wage ~ age, df, ranges, epsilon = 0.5, rng = dpdist_rng(insecure_seed = 4)),
      warning = function(cond) {
        w <<- conditionMessage(cond)
        invokeRestart("muffleWarning")
      })
    stopifnot(!is.null(w), grepl("constant", w))
    stopifnot(coef(fit)[["age"]] == 0, is.na(confint(fit)["age", 1]))
  },

  missing_ranges_and_bad_input_are_refused_with_their_cause = function() {
    df <- make_data(500, 5)
    e <- expect_dpdist_error(blr_lm(wage ~ age, df, list(wage = c(0, 350)), epsilon = 1),
                             "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("no public range for column `age`", conditionMessage(e)))
    e <- expect_dpdist_error(blr_lm(wage ~ age, df, list(age = c(18, 80)), epsilon = 1),
                             "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("response `wage`", conditionMessage(e)))
    expect_dpdist_error(blr_lm(wage ~ age, df, list(wage = c(350, 0), age = c(18, 80)),
                               epsilon = 1), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_lm(wage ~ age, df, ranges, epsilon = -1), "DPD_ERR_INVALID_ARGUMENT")
    fit <- blr_lm(wage ~ age, df, ranges, epsilon = 1, rng = dpdist_rng(insecure_seed = 6))
    expect_dpdist_error(predict(fit), "DPD_ERR_INVALID_ARGUMENT")
  }
))

# Private logistic regression (PLR, objective perturbation) and the PST stacking ensembles of the
# stacking paper. Every fit is epsilon-DP for the rows it is given (delta = 0); epsilon = Inf
# gives the non-private fit. Rows of `x` are records, labels `y` are all 0/1 or all -1/+1.
# Feature indices and group numbers are R's, 1-based. Fits return a "dpdist_plr_model".
# `intercept = TRUE` (the default, as glm) estimates an intercept b: P(y = 1 | x) =
# plogis(b + w'x~), x~ the row projected into the ball of radius r/sqrt(2) (r = input_radius);
# in a stack every low-level model and the high level get one, and the high level's b is the
# stack's. `intercept = FALSE` is the model without intercept, exactly what these functions fitted
# before they had the option.

as_double_matrix <- function(x, name) {
  if (is.data.frame(x)) {
    numeric_cols <- vapply(x, is.numeric, logical(1))
    if (!all(numeric_cols)) {
      j <- which(!numeric_cols)[1]
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                  sprintf("`%s`: column %d ('%s') is not numeric (%s)", name, j, names(x)[j],
                          class(x[[j]])[1]))
    }
    x <- as.matrix(x)
  }
  if (!is.matrix(x) || !is.numeric(x)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                paste0("`", name, "` must be a numeric matrix or a data.frame of numeric columns"))
  }
  storage.mode(x) <- "double"
  if (anyNA(x)) {
    at <- which(is.na(x), arr.ind = TRUE)
    at <- at[order(at[, 1], at[, 2]), , drop = FALSE][1, ]
    dpdist_stop("DPD_ERR_NON_FINITE",
                sprintf("`%s` has %s at row %d, column %d (1-based)%s", name,
                        if (is.nan(x[at[1], at[2]])) "NaN" else "NA", at[1], at[2],
                        if (!is.null(colnames(x))) sprintf(" ('%s')", colnames(x)[at[2]]) else ""))
  }
  x
}

# `y` as doubles; NA/NaN refused with its 1-based position.
as_double_vector <- function(y, name) {
  if (!is.numeric(y) && !is.logical(y)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", paste0("`", name, "` must be a numeric vector"))
  }
  y <- as.double(y)
  if (anyNA(y)) {
    i <- which(is.na(y))[1]
    dpdist_stop("DPD_ERR_NON_FINITE",
                sprintf("`%s` has %s at position %d (1-based)", name,
                        if (is.nan(y[i])) "NaN" else "NA", i))
  }
  y
}

# PLR (stacking paper Alg. 1) with ridge strength `lambda`. `ranges`: NULL, or public ranges
# (known without the private data), one per column of x, as list(lo =, hi =) or a two-column
# matrix (lo, hi) with one row per column of x: each value is clamped into its range and mapped
# onto [-1, 1] before the projection, and the model predicts through the same map.
plr_fit <- function(x, y, epsilon, lambda, rng = NULL, intercept = TRUE, ranges = NULL) {
  x <- as_double_matrix(x, "x")
  if (is.null(ranges)) {
    return(with_names(.Call(dpdr_plr_fit, x, as.double(y), epsilon, lambda, intercept,
                            as_rng(rng)), x))
  }
  r <- as_ranges(ranges, ncol(x))
  with_names(.Call(dpdr_plr_fit_with_ranges, x, as.double(y), epsilon, lambda, intercept, r$lo,
                   r$hi, as_rng(rng)), x)
}

# list(lo, hi) from list(lo =, hi =) or a two-column matrix, one range per feature, checked
# here so that a bad one is named by its 1-based column.
as_ranges <- function(ranges, d) {
  if (is.list(ranges) && !is.null(ranges$lo) && !is.null(ranges$hi)) {
    lo <- ranges$lo
    hi <- ranges$hi
  } else if (is.matrix(ranges) && ncol(ranges) == 2) {
    lo <- ranges[, 1]
    hi <- ranges[, 2]
  } else {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                "`ranges` must be NULL, list(lo =, hi =) or a two-column matrix (lo, hi)")
  }
  if (!is.numeric(lo) || !is.numeric(hi)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`ranges` must be numeric")
  }
  lo <- as.double(lo)
  hi <- as.double(hi)
  if (length(lo) != d || length(hi) != d) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                sprintf("`ranges` has %d lower and %d upper ends; x has %d columns",
                        length(lo), length(hi), d))
  }
  bad <- which(!is.finite(lo) | !is.finite(hi) | !(lo < hi))
  if (length(bad) > 0) {
    j <- bad[1]
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                sprintf("`ranges` of column %d: lo = %s, hi = %s; both finite, lo < hi", j,
                        format(lo[j]), format(hi[j])))
  }
  list(lo = lo, hi = hi)
}

# The stacked fits take `ranges` as plr_fit does, one per column of x: every low-level model
# maps its own columns by their ranges before the projection and predicts through the same map
# (plr_ranges(model, k) reads model k's, in the order of its features); the high level reads
# the low-level outputs and has none.

# PST-S: rows split into `n_parts` low-level PLRs plus a high-level PLR on `high_fraction`.
pst_s_fit <- function(x, y, n_parts, epsilon, lambda, lambda_high = lambda, high_fraction = 0.5,
                      rng = NULL, intercept = TRUE, ranges = NULL) {
  x <- as_double_matrix(x, "x")
  r <- optional_ranges(ranges, ncol(x))
  .Call(dpdr_pst_s_fit, x, as.double(y), n_parts, epsilon, lambda, lambda_high, high_fraction,
        intercept, r$lo, r$hi, as_rng(rng))
}

# PST-F: one low-level PLR per feature group. `groups[j]` is the group (1..K) of column j, or
# NA to leave the column out; `importance` (length K, sums to 1) must come from side
# information, never from the private data.
pst_f_fit <- function(x, y, groups, importance, epsilon, lambda, lambda_high = lambda,
                      high_fraction = 0.5, rng = NULL, intercept = TRUE, ranges = NULL) {
  x <- as_double_matrix(x, "x")
  r <- optional_ranges(ranges, ncol(x))
  .Call(dpdr_pst_f_fit, x, as.double(y), as_groups(groups), as.double(importance), epsilon,
        lambda, lambda_high, high_fraction, intercept, r$lo, r$hi, as_rng(rng))
}

# PST-H (transfer): source models per group at epsilon_source, then PST-F on the target pulled
# towards them. Returns the target's stacked model. `ranges` (one per column, shared by the
# source and the target) map the source models' columns too.
pst_h_fit <- function(source_x, source_y, target_x, target_y, groups, importance,
                      epsilon_source, epsilon_target, lambda_source, lambda_target,
                      lambda_high = lambda_target, high_fraction = 0.5, rng = NULL,
                      intercept = TRUE, ranges = NULL) {
  target_x <- as_double_matrix(target_x, "target_x")
  r <- optional_ranges(ranges, ncol(target_x))
  .Call(dpdr_pst_h_fit, as_double_matrix(source_x, "source_x"), as.double(source_y), target_x,
        as.double(target_y), as_groups(groups), as.double(importance), epsilon_source,
        epsilon_target, lambda_source, lambda_target, lambda_high, high_fraction, intercept,
        r$lo, r$hi, as_rng(rng))
}

# as_ranges, or list(lo = NULL, hi = NULL) for no ranges.
optional_ranges <- function(ranges, d) {
  if (is.null(ranges)) list(lo = NULL, hi = NULL) else as_ranges(ranges, d)
}

# Keeps the column names of the training matrix on a single model, for coef().
with_names <- function(model, x) {
  attr(model, "feature_names") <- colnames(x)
  model
}

as_groups <- function(groups) {
  if (!is.numeric(groups) || any(!is.na(groups) & groups != round(groups))) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`groups` must be whole group numbers (or NA)")
  }
  as.integer(groups)
}

# P(y = 1 | x) for the rows of `newdata`.
predict.dpdist_plr_model <- function(object, newdata, ...) {
  .Call(dpdr_plr_predict_proba, object, as_double_matrix(newdata, "newdata"))
}

# list(kind = "logistic" | "stacked", n_features, n_low_level, epsilon) — epsilon is Inf for a
# non-private fit and NaN for an imported model.
plr_model_info <- function(model) .Call(dpdr_plr_model_info, model)

# list(weights, input_radius) of a single model, or of the high level of a stack.
plr_weights <- function(model) .Call(dpdr_plr_model_weights, model)

# list(features (1-based), weights, input_radius) of low-level model k (1..K) of a stack.
plr_low_level <- function(model, k) .Call(dpdr_plr_model_low_level, model, k)

# The intercept b of a single model or of a stack's high level (k = NULL), or of low-level
# model k (1..K) of a stack; NA for a model fitted or imported without one.
plr_intercept <- function(model, k = NULL) {
  .Call(dpdr_plr_model_intercept, model, if (is.null(k)) 0 else k)
}

# The public ranges a single model (k = NULL) or low-level model k (1..K) of a stack maps its
# inputs from, list(lo, hi) in the order of its features; NULL without ranges (a stack's high
# level never has any).
plr_ranges <- function(model, k = NULL) {
  .Call(dpdr_plr_model_ranges, model, if (is.null(k)) 0 else k)
}

# Imports a single logistic model from exported weights, with its intercept when given (NULL:
# a model without intercept, whose rows are projected to radius input_radius, not r/sqrt(2))
# and its public ranges when given (as plr_fit's `ranges`; plr_ranges reads them).
plr_model_from_weights <- function(weights, input_radius, intercept = NULL, ranges = NULL) {
  if (!is.null(ranges)) {
    r <- as_ranges(ranges, length(weights))
    .Call(dpdr_plr_model_from_weights_and_ranges, as.double(weights), intercept, r$lo, r$hi,
          input_radius)
  } else if (is.null(intercept)) {
    .Call(dpdr_plr_model_from_weights, as.double(weights), input_radius)
  } else {
    .Call(dpdr_plr_model_from_weights_and_intercept, as.double(weights), intercept, input_radius)
  }
}

# Coefficients as glm shows them: "(Intercept)" first when the model has one, then one per
# feature (a single model; named by the training columns when they had names) or one per
# low-level model (a stack's high level, "level1".."levelK"). They act on the projected rows
# (see the header of this file), not on x in its own units; with public ranges on the mapped
# rows (each column clamped into its range and mapped onto [-1, 1]; plr_ranges).
coef.dpdist_plr_model <- function(object, ...) {
  w <- plr_weights(object)$weights
  info <- plr_model_info(object)
  names(w) <- if (info$kind == "stacked") {
    paste0("level", seq_along(w))
  } else if (!is.null(attr(object, "feature_names"))) {
    attr(object, "feature_names")
  } else {
    paste0("x", seq_along(w))
  }
  b <- plr_intercept(object)
  if (is.na(b)) w else c("(Intercept)" = b, w)
}

# Area under the ROC curve (Mann-Whitney, ties count 1/2).
auc <- function(scores, labels) .Call(dpdr_auc, as.double(scores), as.double(labels))

print.dpdist_plr_model <- function(x, ...) {
  info <- plr_model_info(x)
  cat(sprintf("<dpdist_plr_model: %s, %d features%s, epsilon %s>\n", info$kind,
              as.integer(info$n_features),
              if (info$kind == "stacked") sprintf(", %d low-level models",
                                                  as.integer(info$n_low_level)) else "",
              format(info$epsilon)))
  invisible(x)
}

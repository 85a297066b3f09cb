# The regression on real data (docs/src/regression.md): lm's y ~ x with an intercept, fitted from
# one differentially private release of sufficient statistics and reported in the data's units.
# Every column needs a public range -- from a codebook or a physical limit, never from the data;
# a factor's indicator columns get [0, 1] by themselves and are declared as one indicator group
# (a record sets at most one level; a group of 5 or more indicators counts once in the
# sensitivity, so the fit gets less noise than with the same columns as numbers).

blr_lm <- function(formula, data, ranges, epsilon, delta = 1e-5, n_nodes = 0, rng = NULL) {
  if (!inherits(formula, "formula")) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`formula` must be a formula, e.g. wage ~ age + hours")
  }
  if (!is.list(ranges) || is.null(names(ranges))) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                "`ranges` must be a named list of c(lower, upper), e.g. list(age = c(18, 80))")
  }
  frame <- stats::model.frame(formula, data, na.action = stats::na.fail)
  terms <- attr(frame, "terms")
  if (attr(terms, "response") != 1) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`formula` needs a response: y ~ ...")
  }
  response <- deparse(formula[[2]])
  y <- stats::model.response(frame, "numeric")
  design <- stats::model.matrix(terms, frame)
  intercept <- attr(terms, "intercept") == 1
  columns <- setdiff(colnames(design), "(Intercept)")
  if (length(columns) == 0) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`formula` names no column of x")
  }
  x <- design[, columns, drop = FALSE]
  bounds <- public_ranges(columns, terms, frame, ranges, response)
  groups <- indicator_groups(design, terms, frame, bounds)
  rng <- as_rng(rng)
  handle <- .Call(dpdr_regression_fit, x, as.double(y), bounds$lower, bounds$upper, groups,
                  bounds$y, as.double(intercept), c(as.double(epsilon), as.double(delta)),
                  n_nodes, rng)
  fit <- structure(
    list(handle = handle, columns = columns, intercept = intercept,
         terms = stats::delete.response(terms), response = response,
         xlevels = stats::.getXlevels(terms, frame), contrasts = attr(design, "contrasts"),
         ranges = bounds, groups = groups, n = nrow(x), call = match.call()),
    class = "dpdist_lm")
  for (w in regression_warnings(fit)) warning(w, call. = FALSE)
  fit
}

# The public range of every design column: given by name (a column of the model matrix, e.g.
# "age" or "log(income)"), or [0, 1] for a column made of factors and logicals only.
public_ranges <- function(columns, terms, frame, ranges, response) {
  range_of <- function(name) {
    r <- ranges[[name]]
    if (!is.numeric(r) || length(r) != 2) {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                  paste0("the public range of `", name, "` must be c(lower, upper)"))
    }
    as.double(r)
  }
  if (is.null(ranges[[response]])) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                paste0("no public range for the response `", response,
                       "`: give ranges = list(", response,
                       " = c(lower, upper)) from a codebook, never from the data"))
  }
  labels <- attr(terms, "term.labels")
  factors <- attr(terms, "factors")
  categorical <- vapply(rownames(factors), function(v) {
    v %in% names(frame) && (is.factor(frame[[v]]) || is.logical(frame[[v]]) ||
                              is.character(frame[[v]]))
  }, logical(1))
  assign <- attr(stats::model.matrix(terms, frame), "assign")
  assign <- assign[assign > 0]
  lower <- upper <- numeric(length(columns))
  for (k in seq_along(columns)) {
    name <- columns[k]
    term_vars <- rownames(factors)[factors[, labels[assign[k]]] > 0]
    if (!is.null(ranges[[name]])) {
      r <- range_of(name)
    } else if (all(categorical[term_vars])) {
      r <- c(0, 1)
    } else {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                  paste0("no public range for column `", name, "`: give ranges = list(`",
                         name, "` = c(lower, upper)) from a codebook, never from the data"))
    }
    lower[k] <- r[1]
    upper[k] <- r[2]
  }
  list(lower = lower, upper = upper, y = range_of(response))
}

# The indicator group of every design column (0: none): the columns of a term made only of
# factors, characters and logicals coded by treatment contrasts (0/1, at most one set per record:
# a factor's levels but the reference, or the cells of an interaction of such factors) form the
# group numbered by the term, when each has the range [0, 1]. Decided from the formula, the
# variables' types and the contrasts -- public, never from the data's values.
indicator_groups <- function(design, terms, frame, bounds) {
  assign <- attr(design, "assign")
  assign <- assign[colnames(design) != "(Intercept)"]
  factors <- attr(terms, "factors")
  labels <- attr(terms, "term.labels")
  contrasts <- attr(design, "contrasts")
  indicator_variable <- function(v) {
    if (!(v %in% names(frame))) return(FALSE)
    value <- frame[[v]]
    if (is.logical(value)) return(TRUE)
    (is.factor(value) || is.character(value)) &&
      identical(contrasts[[v]], "contr.treatment")
  }
  group_of <- integer(length(assign))
  for (t in unique(assign)) {
    term_vars <- rownames(factors)[factors[, labels[t]] > 0]
    cols <- which(assign == t)
    if (length(term_vars) > 0 && all(vapply(term_vars, indicator_variable, logical(1))) &&
        all(bounds$lower[cols] == 0 & bounds$upper[cols] == 1)) {
      group_of[cols] <- as.integer(t)
    }
  }
  group_of
}

regression_warnings <- function(object) {
  text <- rawToChar(.Call(dpdr_regression_warnings, object$handle))
  if (nchar(text) == 0) character(0) else strsplit(text, "\n", fixed = TRUE)[[1]]
}

regression_quality <- function(object) {
  q <- .Call(dpdr_regression_quality, object$handle)
  list(r_squared = q[1], constant = q[2], sigma = q[3], spent = c(epsilon = q[4], delta = q[5]))
}

coef.dpdist_lm <- function(object, ...) {
  b <- .Call(dpdr_regression_coefficients, object$handle)
  names(b) <- c("(Intercept)", object$columns)
  if (object$intercept) b else b[-1]
}

confint.dpdist_lm <- function(object, parm, level = 0.95, ...) {
  b <- coef(object)
  se <- .Call(dpdr_regression_std_errors, object$handle)
  if (!object$intercept) se <- se[-1]
  z <- stats::qnorm((1 + level) / 2)
  out <- cbind(b - z * se, b + z * se)
  pct <- paste(format(100 * c(1 - level, 1 + level) / 2, trim = TRUE, digits = 3), "%")
  dimnames(out) <- list(names(b), pct)
  if (missing(parm)) out else out[parm, , drop = FALSE]
}

predict.dpdist_lm <- function(object, newdata, ...) {
  if (missing(newdata)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                "`newdata` is needed: a private fit keeps no training rows")
  }
  frame <- stats::model.frame(object$terms, newdata, xlev = object$xlevels,
                              na.action = stats::na.fail)
  design <- stats::model.matrix(object$terms, frame, contrasts.arg = object$contrasts)
  x <- design[, object$columns, drop = FALSE]
  .Call(dpdr_regression_predict, object$handle, x)
}

summary.dpdist_lm <- function(object, ...) {
  b <- coef(object)
  se <- .Call(dpdr_regression_std_errors, object$handle)
  if (!object$intercept) se <- se[-1]
  z <- b / se
  table <- cbind(Estimate = b, `Std. Error` = se, `z value` = z,
                 `Pr(>|z|)` = 2 * stats::pnorm(-abs(z)))
  q <- regression_quality(object)
  structure(c(list(call = object$call, coefficients = table, n = object$n,
                   warnings = regression_warnings(object)), q),
            class = "summary.dpdist_lm")
}

print.summary.dpdist_lm <- function(x, ...) {
  cat("Call:\n")
  print(x$call)
  cat("\nCoefficients (data units; errors include the release's noise, approximately):\n")
  stats::printCoefmat(x$coefficients, na.print = "NA")
  cat(sprintf("\nResidual sd: %.4g on %d records\n", x$sigma, x$n))
  cat(sprintf("DP R-squared: %s (against the constant %.4g), from the released statistics\n",
              if (is.na(x$r_squared)) "not available" else format(x$r_squared, digits = 4),
              x$constant))
  cat(sprintf("Privacy spent: epsilon = %.4g, delta = %.3g\n", x$spent[1], x$spent[2]))
  for (w in x$warnings) cat("Warning:", w, "\n")
  invisible(x)
}

print.dpdist_lm <- function(x, ...) {
  cat("Private linear regression (dpdist)\nCall:\n")
  print(x$call)
  cat("\nCoefficients:\n")
  print(coef(x))
  q <- regression_quality(x)
  cat(sprintf("\nDP R-squared: %s; privacy spent: epsilon = %.4g, delta = %.3g\n",
              if (is.na(q$r_squared)) "not available" else format(q$r_squared, digits = 4),
              q$spent[1], q$spent[2]))
  for (w in regression_warnings(x)) cat("Warning:", w, "\n")
  invisible(x)
}

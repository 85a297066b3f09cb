# Iterative private learning over DCA rounds (DCA paper Sec. 4.2): logistic regression and BLR
# by DP variational inference trained with clipped, noisy minibatch gradients; every iteration
# is one DCA round charged to a Renyi-DP accountant that refuses to pass the budget.

sampling_code <- function(sampling) {
  match(match.arg(sampling, c("poisson", "without_replacement")),
        c("poisson", "without_replacement")) - 1
}

# epsilon after `steps` steps of the sampled Gaussian (noise multiplier z = sigma / C, sampling
# probability q) at delta: c(epsilon =, order =).
rdp_epsilon <- function(q, noise_multiplier, steps, delta,
                        sampling = c("poisson", "without_replacement")) {
  .Call(dpdr_rdp_epsilon, q, noise_multiplier, steps, delta, sampling_code(sampling))
}

# The smallest noise multiplier for which `steps` steps at probability q stay within (epsilon,
# delta).
rdp_noise_multiplier <- function(epsilon, delta, steps, q,
                                 sampling = c("poisson", "without_replacement")) {
  .Call(dpdr_rdp_noise_multiplier, epsilon, delta, steps, q, sampling_code(sampling))
}

# Settings of an iterative run. A private run needs the budget (epsilon, delta); its noise
# multiplier is calibrated for the planned iterations unless given. private = FALSE is for
# baselines only (no noise, no clipping). `intercept` (logistic only; NULL means TRUE for
# logistic, as glm) estimates an intercept b: theta = (w, b), b last, unpenalised, inside each
# record's clipped gradient; FALSE is the model without intercept, exactly as before.
iterative_settings <- function(model = c("logistic", "blr_vi"), l2 = 0, noise_precision = 1,
                               prior_precision = 1, sampling = c("poisson", "fixed_size"),
                               rate = 0.05, batch = 0, optimizer = c("adam", "sgd"),
                               learning_rate = 0.02, beta1 = 0.9, beta2 = 0.999,
                               adam_epsilon = 1e-8, clip_norm = 1, n_nodes = 3,
                               max_dropped = 0, private = TRUE, epsilon = NA, delta = NA,
                               noise_multiplier = NA, intercept = NULL) {
  model <- match.arg(model)
  if (is.null(intercept)) intercept <- model == "logistic"
  if (!is.logical(intercept) || length(intercept) != 1 || is.na(intercept)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`intercept` must be TRUE or FALSE")
  }
  if (intercept && model != "logistic") {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`intercept` is an option of logistic regression only")
  }
  sampling <- match.arg(sampling)
  optimizer <- match.arg(optimizer)
  if (!is.logical(private) || length(private) != 1 || is.na(private)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`private` must be TRUE or FALSE")
  }
  structure(
    list(model = if (model == "logistic") 0 else 1, l2 = l2, noise_precision = noise_precision,
         prior_precision = prior_precision, sampling = if (sampling == "poisson") 0 else 1,
         rate = rate, batch = batch, optimizer = if (optimizer == "adam") 0 else 1,
         learning_rate = learning_rate, beta1 = beta1, beta2 = beta2,
         adam_epsilon = adam_epsilon, clip_norm = clip_norm, n_nodes = n_nodes,
         max_dropped = max_dropped, private = as.double(private),
         epsilon = as.double(epsilon), delta = as.double(delta),
         noise_multiplier = as.double(noise_multiplier), intercept = as.double(intercept)),
    class = "dpdist_iterative_settings"
  )
}

# The smallest noise multiplier for which `iterations` iterations of `settings` on n_clients x dim
# stay within its (epsilon, delta), for the mechanism the trainer charges.
iterative_calibrate <- function(settings, n_clients, dim, iterations) {
  .Call(dpdr_iterative_calibrate, settings, n_clients, dim, iterations)
}

# A trainer for the rows of `x` (one client each), run for up to `iterations` iterations (a
# private run's noise lasts exactly that many unless settings give it). `ranges` (logistic
# only): NULL, or public ranges one per column of x as in plr_fit. Returns a
# "dpdist_iterative_trainer".
iterative_fit <- function(x, y, settings, iterations, rng = NULL, ranges = NULL) {
  x <- as_double_matrix(x, "x")
  trainer <- iterative_trainer(settings, nrow(x), ncol(x), iterations, rng, ranges)
  iterative_train(trainer, x, y, iterations)
  trainer
}

# A trainer for n_clients clients (one record each) with `dim` features, before any iteration;
# a private run's noise is calibrated for `iterations` planned iterations unless settings give it.
# `ranges` (logistic only): NULL, or public ranges one per feature, list(lo =, hi =) or a
# two-column matrix as in plr_fit: each record's x_j is clamped into [lo_j, hi_j] and mapped onto
# [-1, 1] before its gradient is clipped, and predict() maps new rows the same way.
iterative_trainer <- function(settings, n_clients, dim, iterations, rng = NULL, ranges = NULL) {
  if (inherits(settings, "dpdist_iterative_settings") && isTRUE(settings$private == 1) &&
      (is.na(settings$epsilon) || is.na(settings$delta))) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", paste(
      "a private run needs its budget: iterative_settings(epsilon =, delta =),",
      "or private = FALSE for a non-private baseline"))
  }
  if (!is.null(ranges) && inherits(settings, "dpdist_iterative_settings") &&
      settings$model != 0) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`ranges` is an option of logistic regression only")
  }
  r <- optional_ranges(ranges, dim)
  trainer <- .Call(dpdr_iterative_trainer, settings, n_clients, dim, iterations, as_rng(rng),
                   r$lo, r$hi)
  # For coef(): which model theta belongs to.
  attr(trainer, "logistic_intercept") <- if (settings$model == 0) settings$intercept == 1 else NA
  trainer
}

# Up to `iterations` more iterations on the same records; stops, without error, at the budget.
# Returns how many ran.
iterative_train <- function(trainer, x, y, iterations) {
  .Call(dpdr_iterative_fit, trainer, as_double_matrix(x, "x"), as.double(y), iterations)
}

# One iteration; clients in `dropped` (0-based ids, at most max_dropped) send nothing. Signals
# DPD_ERR_BUDGET_EXCEEDED, with nothing released or changed, once the budget is spent.
iterative_step <- function(trainer, x, y, dropped = numeric(0)) {
  .Call(dpdr_iterative_step, trainer, as_double_matrix(x, "x"), as.double(y),
        as.double(dropped))
}

# theta: the d weights (logistic), then the intercept b with one (d + 1 values); (m, log s) of
# length 2d (DP-VI BLR).
iterative_params <- function(trainer) .Call(dpdr_iterative_params, trainer)

# The last iteration's released noisy sum (numeric(0) before the first iteration): public, the
# clipped gradients of the sampled clients plus the round's noise.
iterative_last_release <- function(trainer) .Call(dpdr_iterative_last_release, trainer)

# c(epsilon =, delta =, iterations =, noise_multiplier =) spent so far (epsilon Inf when
# non-private).
iterative_spent <- function(trainer) .Call(dpdr_iterative_spent, trainer)

# P(y = 1 | x) (logistic) or the posterior mean x^T m (DP-VI BLR) for each row of `newdata`.
predict.dpdist_iterative_trainer <- function(object, newdata, ...) {
  .Call(dpdr_iterative_predict, object, as_double_matrix(newdata, "newdata"))
}

# Logistic regression's coefficients as glm shows them: "(Intercept)" first when the run
# estimates one, then x1..xd. DP-VI BLR: the posterior means m.
coef.dpdist_iterative_trainer <- function(object, ...) {
  theta <- iterative_params(object)
  with_b <- attr(object, "logistic_intercept")
  if (is.null(with_b) || is.na(with_b)) {
    m <- theta[seq_len(length(theta) / 2)]
    return(stats::setNames(m, paste0("x", seq_along(m))))
  }
  if (!with_b) return(stats::setNames(theta, paste0("x", seq_along(theta))))
  d <- length(theta) - 1
  c("(Intercept)" = theta[[d + 1]], stats::setNames(theta[seq_len(d)], paste0("x", seq_len(d))))
}

print.dpdist_iterative_trainer <- function(x, ...) {
  s <- iterative_spent(x)
  cat(sprintf("<dpdist_iterative_trainer: %d iterations, epsilon %g, delta %g>\n",
              as.integer(s[["iterations"]]), s[["epsilon"]], s[["delta"]]))
  invisible(x)
}

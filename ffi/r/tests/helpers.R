# Shared by the test files (each sources it); plain base R, no testthat.
suppressPackageStartupMessages(library(dpdist))

# Evaluates `expr`, which must signal a dpdist_error with the given status; returns the
# condition. Any other outcome (no error, another status, a plain R error) fails the test.
expect_dpdist_error <- function(expr, status) {
  cond <- tryCatch({
    force(expr)
    NULL
  }, error = function(e) e)
  if (is.null(cond)) stop("expected ", status, " but the call succeeded", call. = FALSE)
  if (!inherits(cond, "dpdist_error")) {
    stop("expected ", status, " but got a plain R error: ", conditionMessage(cond), call. = FALSE)
  }
  if (!identical(cond$status, status)) {
    stop("expected ", status, " but got ", conditionMessage(cond), call. = FALSE)
  }
  if (!inherits(cond, status)) stop("condition lacks the class ", status, call. = FALSE)
  cond
}

expect_near <- function(actual, expected, tol, what = deparse(substitute(actual))) {
  if (length(actual) != length(expected) || any(!is.finite(actual)) ||
      any(abs(actual - expected) > tol)) {
    stop(sprintf("%s: expected %s within %g, got %s", what,
                 paste(format(expected, digits = 15), collapse = " "), tol,
                 paste(format(actual, digits = 15), collapse = " ")), call. = FALSE)
  }
  invisible(TRUE)
}

# Runs the named test functions of a file, reports each, and fails the script if any failed.
run_tests <- function(tests) {
  failed <- 0
  for (name in names(tests)) {
    result <- tryCatch({
      tests[[name]]()
      NULL
    }, error = function(e) conditionMessage(e))
    if (is.null(result)) {
      cat("ok   ", name, "\n")
    } else {
      cat("FAIL ", name, ": ", result, "\n", sep = "")
      failed <- failed + 1
    }
  }
  if (failed > 0) stop(failed, " test(s) failed", call. = FALSE)
  invisible(TRUE)
}

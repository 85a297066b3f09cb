# Every failure of the C library (and every argument the binding refuses) is signalled as a
# condition of class c(<status name>, "dpdist_error", "error", "condition"), so callers can
# tryCatch(..., DPD_ERR_BUDGET_EXCEEDED = function(e) ...) or inspect e$status.

# Called from C (src/common.c); never returns.
signal_dpdist_error <- function(status, message) {
  cond <- structure(
    class = c(status, "dpdist_error", "error", "condition"),
    list(message = paste0(status, ": ", message), call = sys.call(-1), status = status)
  )
  stop(cond)
}

# The same condition, raised from R code of the binding.
dpdist_stop <- function(status, message) signal_dpdist_error(status, message)

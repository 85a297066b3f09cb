# A source of randomness for samplers and DCA clients.
#
# By default it is ChaCha20 keyed from the operating system's CSPRNG: use that for anything
# real. `insecure_seed` gives a reproducible stream for tests and experiments only: whoever
# knows the seed can remove the noise and unmask the shares.
# Each call that consumes randomness draws an independent child stream from the object, so a
# fixed-seed object yields the same sequence of results in the same order of calls.
dpdist_rng <- function(insecure_seed = NULL) {
  if (is.null(insecure_seed)) {
    rng <- .Call(dpdr_rng_new_os)
    attr(rng, "insecure") <- FALSE
  } else {
    rng <- .Call(dpdr_rng_new_insecure_fixed_seed, insecure_seed)
    attr(rng, "insecure") <- TRUE
  }
  rng
}

print.dpdist_rng <- function(x, ...) {
  cat(if (isTRUE(attr(x, "insecure"))) "<dpdist_rng: INSECURE fixed seed>\n"
      else "<dpdist_rng: OS CSPRNG>\n")
  invisible(x)
}

# The rng argument of every function: NULL means a fresh OS-seeded generator.
as_rng <- function(rng) if (is.null(rng)) dpdist_rng() else rng

# Frees the C object behind a dpdist handle now rather than at garbage collection.
# Later use of `x` signals DPD_ERR_NULL_POINTER.
dpdist_free <- function(x) invisible(.Call(dpdr_free, x))

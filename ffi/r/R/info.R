# Version of the linked dpdist C library (a string such as "0.1.0").
dpdist_version <- function() .Call(dpdr_version)

# ABI version of the linked C library; the binding was written for ABI 2.
dpdist_abi_version <- function() .Call(dpdr_abi_version)

# Caps the library's worker threads (0 = one per core). Works only before the first parallel
# computation of the session; later it signals DPD_ERR_ALREADY_INITIALIZED.
dpdist_set_threads <- function(n) invisible(.Call(dpdr_set_num_threads, n))

# Number of worker threads the library uses (builds the pool if needed).
dpdist_threads <- function() .Call(dpdr_num_threads)

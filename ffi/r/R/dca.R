# DCA, the Distributed Compute Algorithm: a secure sum over additive secret shares in fixed
# point. Ids follow the protocol and are 0-based: clients 0..n_clients-1, nodes 0..n_nodes-1.

share_modes <- c(full = 0L, seed = 1L)

# The configuration of one differentially private round; every party builds it from the same
# arguments.
#   n_clients    N registered clients, ids 0..N-1
#   n_nodes      M >= 2 compute nodes
#   max_dropped  T: clients that may drop out or collude (the noise is calibrated for N-T-1)
#   dim          vector length d; every element must satisfy |x| <= bound
#   mode         "seed": nodes 1..M-1 get a 16-byte seed; "full": every share sent in full
#   noise_sigma_total  sigma > 0 of the Gaussian noise in the released sum (required; 0, NA or
#                a negative value is refused: an exact sum is dca_config_exact, NON-PRIVATE)
#   frac_bits    NULL picks the fixed-point precision automatically
dca_config <- function(round, n_clients, n_nodes, max_dropped, dim, bound,
                       mode = c("seed", "full"), noise_sigma_total, frac_bits = NULL) {
  mode <- match.arg(mode)
  if (missing(noise_sigma_total)) {
    dpdist_stop("DPD_ERR_INVALID_PRIVACY_PARAMETER",
                paste("`noise_sigma_total` is required (calibrate it with gaussian_sigma_analytic);",
                      "for an exact, NON-PRIVATE sum use dca_config_exact"))
  }
  if (is.null(noise_sigma_total)) {
    dpdist_stop("DPD_ERR_INVALID_PRIVACY_PARAMETER",
                "`noise_sigma_total` is NULL; for an exact, NON-PRIVATE sum use dca_config_exact")
  }
  .Call(dpdr_round_config_new, round, n_clients, n_nodes, max_dropped, dim, bound,
        share_modes[[mode]], noise_sigma_total, frac_bits)
}

# NON-PRIVATE: the configuration of a round that releases the EXACT sum, without any noise.
# The nodes and the aggregator still see only shares, but the released sum is not
# differentially private. For tests, benchmarks and data that is not personal.
dca_config_exact <- function(round, n_clients, n_nodes, max_dropped, dim, bound,
                             mode = c("seed", "full"), frac_bits = NULL) {
  mode <- match.arg(mode)
  .Call(dpdr_round_config_new, round, n_clients, n_nodes, max_dropped, dim, bound,
        share_modes[[mode]], NULL, frac_bits)
}

# list(frac_bits, sigma_client, dim) of a configuration.
dca_config_info <- function(config) .Call(dpdr_round_config_info, config)

# A client of the round; `rng` (NULL = OS CSPRNG) supplies its masks and noise.
dca_client <- function(config, client_id, rng = NULL) {
  .Call(dpdr_client_new, config, client_id, as_rng(rng))
}

# Encodes `values` (length dim, |x| <= bound), adds the client's noise, and splits it into one
# share per compute node. Returns a list of raw vectors: element "node<k>" goes to node k.
dca_shard <- function(client, values) .Call(dpdr_client_shard, client, as.double(values))

# The round ids a party has taken part in: a node or aggregator created with `ledger =` refuses
# (DPD_ERR_WRONG_ROUND, nothing created) a round id the ledger saw with another configuration.
dca_ledger <- function() .Call(dpdr_round_ledger_new)

# Records the round of `config` in the ledger: TRUE for a new round id, FALSE for the same round
# again; DPD_ERR_WRONG_ROUND (ledger unchanged) for a reused id with another configuration.
dca_admit <- function(ledger, config) .Call(dpdr_round_ledger_admit, ledger, config)

# The admitted rounds, for storage: list(round = ids, digest = list of 16-byte raw vectors), in
# increasing id. After a restart, dca_admit_digest() of each pair restores the ledger.
dca_ledger_entries <- function(ledger) .Call(dpdr_round_ledger_entries, ledger)

# As dca_admit(), from a (round id, digest) pair saved by dca_ledger_entries().
dca_admit_digest <- function(ledger, round, digest) {
  .Call(dpdr_round_ledger_admit_digest, ledger, as.double(round), digest)
}

# Compute node `node` (0-based) of the round, admitted through `ledger` when one is given.
dca_node <- function(config, node, ledger = NULL) .Call(dpdr_node_new, config, node, ledger)

# Adds one share message (raw wire bytes) to the node's running sum. On error nothing changes.
dca_absorb <- function(node, bytes) invisible(.Call(dpdr_node_absorb, node, bytes))

# Takes back an absorbed full-mode share of a client that is outside the agreed set.
dca_retract <- function(node, bytes) invisible(.Call(dpdr_node_retract, node, bytes))

# The (client, shard) pairs whose shares the node has absorbed: a data frame with columns
# `client` (0-based id) and `shard` (the sharding attempt, 16 hex digits). The nodes agree on the
# pairs every node holds, Reduce(merge, lapply(nodes, dca_received)): a client whose nodes hold
# different attempts (it sharded twice) is not in that intersection.
dca_received <- function(node) {
  r <- .Call(dpdr_node_received, node)
  data.frame(client = r$client, shard = r$shard, stringsAsFactors = FALSE)
}

# The node's sum over exactly the `agreed` pairs (a data frame like dca_received's). Refuses
# (DPD_ERR_TOO_MANY_DROPPED) if more than max_dropped are missing, DPD_ERR_INVALID_ARGUMENT if a
# pair names another attempt than the node absorbed.
dca_finalize <- function(node, agreed) {
  .Call(dpdr_node_finalize, node, agreed$client, as.character(agreed$shard))
}

# The aggregator of the round: add every node's sum, then release.
dca_aggregator <- function(config, ledger = NULL) .Call(dpdr_aggregator_new, config, ledger)

dca_add <- function(aggregator, node_sum) {
  invisible(.Call(dpdr_aggregator_add, aggregator, node_sum))
}

# The released (noisy) sum and what went into it: list(sum, n_clients, n_included,
# max_dropped, frac_bits, noise_sigma_total, noise_sigma_client, noise_sigma_released).
dca_release <- function(aggregator) .Call(dpdr_aggregator_release, aggregator)

# Header of share-message bytes (parses untrusted bytes; malformed input is DPD_ERR_MALFORMED).
dca_wire_inspect <- function(bytes) .Call(dpdr_wire_inspect, bytes)

# Runs one whole round in process: row i of `inputs` (N x d) is client i-1's vector; the
# clients listed in `dropped` (0-based ids) never send. Returns what dca_release returns.
# `bound` must come from side knowledge, not from the private data.
dca_simulate_round <- function(inputs, n_nodes = 2, max_dropped = 0, mode = c("seed", "full"),
                               sigma_total, bound, dropped = numeric(0), round = 1,
                               frac_bits = NULL, rng = NULL, non_private = FALSE) {
  config <- simulation_config(inputs, n_nodes, max_dropped, mode, sigma_total, bound, round,
                              frac_bits, non_private)
  storage.mode(inputs) <- "double"
  .Call(dpdr_simulate_round, config, inputs, dropped, as_rng(rng))
}

# The round config of dca_simulate_round and dca_simulate_round_verified (`sigma_total` and
# `bound` may be missing: missingness passes through).
simulation_config <- function(inputs, n_nodes, max_dropped, mode, sigma_total, bound, round,
                              frac_bits, non_private) {
  if (!is.matrix(inputs) || !is.numeric(inputs)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`inputs` must be a numeric matrix (clients x dim)")
  }
  if (missing(bound)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                "`bound` (|x| <= bound for every element) is required; take it from side knowledge")
  }
  if (isTRUE(non_private) == !missing(sigma_total)) {
    dpdist_stop("DPD_ERR_INVALID_PRIVACY_PARAMETER",
                paste("give exactly one of `sigma_total` (> 0, a private round) and",
                      "`non_private = TRUE` (an exact, NON-PRIVATE sum)"))
  }
  if (isTRUE(non_private)) {
    dca_config_exact(round, nrow(inputs), n_nodes, max_dropped, ncol(inputs), bound,
                     mode = mode, frac_bits = frac_bits)
  } else {
    dca_config(round, nrow(inputs), n_nodes, max_dropped, ncol(inputs), bound,
               mode = mode, noise_sigma_total = sigma_total, frac_bits = frac_bits)
  }
}

# Issue 43's validity check (off by default), set on `config` in place: "linf" makes every client
# prove that each coordinate of its contribution (data plus its noise slice, clamped to
# [-tau, tau] so that clamping changes anything with probability <= truncation_delta) lies within
# +-B; "l2" that its contribution has L2 norm at most R = ceil(data_norm * 2^frac_bits) + tau2
# (`data_norm` bounds each client's data row; a longer noise slice is scaled back to tau2, with
# probability <= truncation_delta; a client whose row is longer refuses, failing the round);
# "none" turns it off. So far only dca_simulate_round_verified runs such a round: clients,
# nodes, aggregators and dca_simulate_round refuse the config. Returns `config` invisibly.
dca_set_validity <- function(config, kind = c("linf", "none", "l2"), truncation_delta = 1e-9,
                             data_norm = NULL) {
  kind <- match.arg(kind)
  if (kind == "l2") {
    # A missing `data_norm` (NULL) is refused by the C glue: DPD_ERR_INVALID_ARGUMENT.
    .Call(dpdr_round_config_set_validity_l2, config, data_norm, truncation_delta)
  } else {
    .Call(dpdr_round_config_set_validity, config, c(none = 0L, linf = 1L)[[kind]],
          truncation_delta)
  }
  invisible(config)
}

# list(kind, truncation_delta_target, data_units, slice_units (tau or tau2), bound_units (B or
# R), truncation_delta (delta_t)); units are the round's grid, as doubles (exact below 2^53).
dca_validity_info <- function(config) .Call(dpdr_round_config_validity_info, config)

# delta + (1 + exp(epsilon)) * truncation_delta: the delta of a verified round whose round
# without clamping is (epsilon, delta)-DP.
dca_verified_total_delta <- function(epsilon, delta, truncation_delta) {
  .Call(dpdr_verified_total_delta, epsilon, delta, truncation_delta)
}

# As dca_simulate_round, with validity on (`validity` "linf", or "l2" with the data's norm bound
# `data_norm`, at `truncation_delta`): every client's contribution is checked by the nodes;
# invalid clients are left out like dropouts. Returns what
# dca_simulate_round returns plus `invalid` (0-based ids of the clients left out) and
# `truncation_delta`. `testing_malicious` (TESTING ONLY: ids of clients that send 10^6 times
# their bound in coordinate 0) shows that such clients are left out and named.
dca_simulate_round_verified <- function(inputs, n_nodes = 2, max_dropped = 0,
                                        mode = c("seed", "full"), sigma_total, bound,
                                        dropped = numeric(0), round = 1, frac_bits = NULL,
                                        rng = NULL, non_private = FALSE,
                                        truncation_delta = 1e-9,
                                        testing_malicious = numeric(0),
                                        validity = c("linf", "l2"), data_norm = NULL) {
  validity <- match.arg(validity)
  config <- simulation_config(inputs, n_nodes, max_dropped, mode, sigma_total, bound, round,
                              frac_bits, non_private)
  dca_set_validity(config, validity, truncation_delta, data_norm)
  storage.mode(inputs) <- "double"
  .Call(dpdr_simulate_round_verified, config, inputs, dropped, testing_malicious, as_rng(rng))
}

print.dpdist_round_config <- function(x, ...) {
  info <- dca_config_info(x)
  cat(sprintf("<dpdist_round_config: dim %d, %d fractional bits, %s>\n",
              as.integer(info$dim), info$frac_bits,
              if (info$sigma_client == 0) "NON-PRIVATE exact sum"
              else sprintf("client sigma %.6g", info$sigma_client)))
  invisible(x)
}

# Wire bytes of a node sum, for the hop from a compute node to the aggregator, and back.
dca_node_sum_bytes <- function(node_sum) .Call(dpdr_node_sum_to_bytes, node_sum)
# Decoding checks the bytes against the round `config` (another round or configuration:
# DPD_ERR_WRONG_ROUND; malformed: DPD_ERR_MALFORMED).
dca_node_sum_from_bytes <- function(config, bytes) .Call(dpdr_node_sum_from_bytes, config, bytes)

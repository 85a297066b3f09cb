# DCA rounds driven step by step through the wire bytes, and in one call.
source("helpers.R")

# Each encoded value is within half a grid step 2^-(f+1) of the input, so a sum of n values is
# within n * 2^-(f+1) of the exact sum; n * 2^-f leaves room for the double arithmetic.
quantum <- function(release, n) n * 2^-release$frac_bits

inputs_5x4 <- function() {
  matrix(c(1.5, -2.25, 3.125, 0.3,
           -7.7, 0.001, 2.0, -0.5,
           9.99, 4.4, -3.3, 1.1,
           0.0, -9.5, 8.75, 2.2,
           -1.0, 1.0, -1.0, 1.0), nrow = 5, byrow = TRUE)
}

# Runs a round with every client sending to the nodes listed in `sends[[client + 1]]`
# (0-based node ids); returns the release.
manual_round <- function(x, mode, n_nodes = 3, max_dropped = 1, sends = NULL, seed = 1,
                         via_bytes = FALSE) {
  n <- nrow(x)
  cfg <- dca_config_exact(round = 42, n_clients = n, n_nodes = n_nodes, max_dropped = max_dropped,
                    dim = ncol(x), bound = 10, mode = mode)
  rng <- dpdist_rng(insecure_seed = seed)
  nodes <- lapply(seq_len(n_nodes) - 1, function(k) dca_node(cfg, k))
  messages <- list()
  for (i in seq_len(n)) {
    shares <- dca_shard(dca_client(cfg, i - 1, rng), x[i, ])
    stopifnot(length(shares) == n_nodes, identical(names(shares)[1], "node0"))
    messages[[i]] <- shares
    targets <- if (is.null(sends)) seq_len(n_nodes) - 1 else sends[[i]]
    for (k in targets) dca_absorb(nodes[[k + 1]], shares[[k + 1]])
  }
  agreed <- Reduce(merge, lapply(nodes, dca_received))
  # Full shares of clients outside the agreed set are taken back (seed shares need not be).
  for (i in setdiff(seq_len(n) - 1, agreed$client)) {
    for (k in seq_len(n_nodes) - 1) {
      if ((i %in% dca_received(nodes[[k + 1]])$client) &&
          dca_wire_inspect(messages[[i + 1]][[k + 1]])$mode == "full") {
        dca_retract(nodes[[k + 1]], messages[[i + 1]][[k + 1]])
      }
    }
  }
  agg <- dca_aggregator(cfg)
  for (node in nodes) {
    node_sum <- dca_finalize(node, agreed)
    # In a deployment the node sum travels to the aggregator as bytes.
    if (via_bytes) node_sum <- dca_node_sum_from_bytes(cfg, dca_node_sum_bytes(node_sum))
    dca_add(agg, node_sum)
  }
  dca_release(agg)
}

run_tests(list(
  full_round_equals_the_plain_sum = function() {
    x <- inputs_5x4()
    for (mode in c("seed", "full")) {
      r <- manual_round(x, mode)
      expect_near(r$sum, colSums(x), quantum(r, 5), paste(mode, "sum"))
      stopifnot(r$n_clients == 5, r$n_included == 5, r$max_dropped == 1)
      stopifnot(r$noise_sigma_total == 0, r$noise_sigma_released == 0)
    }
  },

  dropout_is_left_out_of_the_sum = function() {
    x <- inputs_5x4()
    # Client 2 never sends; client 3 reaches only node 0 (must be retracted there). T = 2.
    sends <- list(0:2, 0:2, integer(0), 0L, 0:2)
    for (mode in c("seed", "full")) {
      r <- manual_round(x, mode, max_dropped = 2, sends = sends)
      stopifnot(r$n_included == 3, r$max_dropped == 2)
      expect_near(r$sum, colSums(x[c(1, 2, 5), ]), quantum(r, 3), paste(mode, "dropout sum"))
    }
  },

  node_sums_travel_as_bytes = function() {
    x <- inputs_5x4()
    r <- manual_round(x, "seed", via_bytes = TRUE)
    expect_near(r$sum, colSums(x), quantum(r, 5), "sum via node-sum bytes")
    cfg <- dca_config_exact(1, 3, 2, 0, 2, 10)
    node <- dca_node(cfg, 0)
    for (i in 0:2) dca_absorb(node, dca_shard(dca_client(cfg, i), c(1, 2))$node0)
    bytes <- dca_node_sum_bytes(dca_finalize(node, dca_received(node)))
    expect_dpdist_error(dca_node_sum_from_bytes(cfg, bytes[-length(bytes)]), "DPD_ERR_MALFORMED")
    expect_dpdist_error(dca_node_sum_from_bytes(cfg, raw(3)), "DPD_ERR_MALFORMED")
    other <- dca_config_exact(1, 4, 2, 0, 2, 10) # the same round id with another N
    expect_dpdist_error(dca_node_sum_from_bytes(other, bytes), "DPD_ERR_WRONG_ROUND")
    agg <- dca_aggregator(cfg)
    dca_add(agg, dca_node_sum_from_bytes(cfg, bytes))
    expect_dpdist_error(dca_add(agg, dca_node_sum_from_bytes(cfg, bytes)),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(dca_release(agg), "DPD_ERR_INVALID_STATE") # node 1's sum is missing
  },

  mixed_retry_is_excluded_never_summed = function() {
    # Client 0 shards twice: node 0 absorbs the first attempt, node 1 the retry. The pair
    # agreement leaves client 0 out; agreeing on ids alone is refused by the aggregator.
    x <- inputs_5x4()
    cfg <- dca_config_exact(9, 5, 2, 1, 4, 10, mode = "seed")
    rng <- dpdist_rng(insecure_seed = 6)
    nodes <- list(dca_node(cfg, 0), dca_node(cfg, 1))
    client0 <- dca_client(cfg, 0, rng)
    first <- dca_shard(client0, x[1, ])
    retry <- dca_shard(client0, x[1, ])
    stopifnot(!identical(dca_wire_inspect(first$node0)$shard, dca_wire_inspect(retry$node0)$shard))
    dca_absorb(nodes[[1]], first$node0)
    dca_absorb(nodes[[2]], retry$node1)
    for (i in 2:5) {
      s <- dca_shard(dca_client(cfg, i - 1, rng), x[i, ])
      dca_absorb(nodes[[1]], s$node0)
      dca_absorb(nodes[[2]], s$node1)
    }
    ids_only <- dca_aggregator(cfg)
    dca_add(ids_only, dca_finalize(nodes[[1]], dca_received(nodes[[1]])))
    expect_dpdist_error(dca_add(ids_only, dca_finalize(nodes[[2]], dca_received(nodes[[2]]))),
                        "DPD_ERR_INVALID_ARGUMENT")
    agreed <- Reduce(merge, lapply(nodes, dca_received))
    stopifnot(identical(agreed$client, c(1, 2, 3, 4)))
    dca_retract(nodes[[1]], first$node0)
    agg <- dca_aggregator(cfg)
    for (node in nodes) dca_add(agg, dca_finalize(node, agreed))
    r <- dca_release(agg)
    expect_near(r$sum, colSums(x[-1, ]), quantum(r, 4), "sum without the mixed client")
  },

  reused_round_id_is_refused_by_the_ledger = function() {
    cfg <- dca_config_exact(7, 3, 2, 0, 2, 10)
    other <- dca_config_exact(7, 4, 2, 0, 2, 10) # the same round id with another N
    ledger <- dca_ledger()
    stopifnot(isTRUE(dca_admit(ledger, cfg)), identical(dca_admit(ledger, cfg), FALSE))
    node <- dca_node(cfg, 1, ledger = ledger)
    agg <- dca_aggregator(cfg, ledger = ledger)
    stopifnot(inherits(node, "dpdist_node"), inherits(agg, "dpdist_aggregator"))
    expect_dpdist_error(dca_admit(ledger, other), "DPD_ERR_WRONG_ROUND")
    expect_dpdist_error(dca_node(other, 0, ledger = ledger), "DPD_ERR_WRONG_ROUND")
    expect_dpdist_error(dca_aggregator(other, ledger = ledger), "DPD_ERR_WRONG_ROUND")
    # Without a ledger nothing is checked; the ledger is unchanged by the refusals.
    stopifnot(inherits(dca_node(other, 0), "dpdist_node"))
    stopifnot(identical(dca_admit(ledger, cfg), FALSE))
    # Saved and restored (a restarted party): the reused id is still refused.
    saved <- dca_ledger_entries(ledger)
    stopifnot(identical(saved$round, 7), length(saved$digest) == 1L,
              length(saved$digest[[1]]) == 16L)
    restored <- dca_ledger()
    stopifnot(isTRUE(dca_admit_digest(restored, saved$round[1], saved$digest[[1]])))
    stopifnot(identical(dca_admit(restored, cfg), FALSE))
    expect_dpdist_error(dca_admit(restored, other), "DPD_ERR_WRONG_ROUND")
    expect_dpdist_error(dca_admit_digest(restored, 8, as.raw(1:2)), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(dca_admit_digest(restored, 8, 1:16), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(dca_node(cfg, 0, ledger = cfg), "DPD_ERR_INVALID_ARGUMENT")
  },

  too_many_dropouts_release_nothing = function() {
    x <- inputs_5x4()
    sends <- list(0:2, integer(0), integer(0), 0:2, 0:2) # 2 missing, T = 1
    expect_dpdist_error(manual_round(x, "seed", sends = sends), "DPD_ERR_TOO_MANY_DROPPED")
  },

  unretracted_full_share_is_refused = function() {
    cfg <- dca_config_exact(1, 3, 2, 1, 2, 10, mode = "full")
    rng <- dpdist_rng(insecure_seed = 3)
    n0 <- dca_node(cfg, 0)
    n1 <- dca_node(cfg, 1)
    for (i in 0:2) {
      s <- dca_shard(dca_client(cfg, i, rng), c(1, 2))
      dca_absorb(n0, s$node0)
      if (i != 2) dca_absorb(n1, s$node1)
    }
    agreed <- dca_received(n1)
    stopifnot(identical(agreed$client, c(0, 1)))
    expect_dpdist_error(dca_finalize(n0, agreed), "DPD_ERR_INVALID_STATE")
  },

  wire_bytes_describe_themselves = function() {
    cfg <- dca_config_exact(7, 4, 3, 0, 5, 1, mode = "seed")
    s <- dca_shard(dca_client(cfg, 2, dpdist_rng(insecure_seed = 4)), rep(0.5, 5))
    h0 <- dca_wire_inspect(s$node0)
    h2 <- dca_wire_inspect(s$node2)
    stopifnot(h0$round == 7, h0$client == 2, h0$dim == 5, h0$node == 0, h0$mode == "full")
    stopifnot(h2$node == 2, h2$mode == "seed", length(s$node2) < length(s$node0))
    stopifnot(h0$frac_bits == dca_config_info(cfg)$frac_bits)
    stopifnot(nchar(h0$shard) == 16, identical(h0$shard, h2$shard)) # one attempt, M messages
  },

  bad_input_is_an_error_and_changes_nothing = function() {
    cfg <- dca_config_exact(1, 4, 2, 1, 3, 10, mode = "seed")
    rng <- dpdist_rng(insecure_seed = 5)
    client <- dca_client(cfg, 0, rng)
    expect_dpdist_error(dca_shard(client, c(1, 2)), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(dca_shard(client, c(1, NaN, 2)), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(dca_shard(client, c(1, NA, 2)), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(dca_shard(client, c(1, 11, 2)), "DPD_ERR_OVERFLOW")
    expect_dpdist_error(dca_client(cfg, 4, rng), "DPD_ERR_INVALID_ARGUMENT") # ids are 0..3

    node <- dca_node(cfg, 0)
    s <- dca_shard(client, c(1, 2, 3))
    dca_absorb(node, s$node0)
    expect_dpdist_error(dca_absorb(node, s$node0), "DPD_ERR_DUPLICATE_CLIENT")
    expect_dpdist_error(dca_absorb(node, s$node0[-length(s$node0)]), "DPD_ERR_MALFORMED")
    expect_dpdist_error(dca_absorb(node, s$node0[1:10]), "DPD_ERR_MALFORMED")
    expect_dpdist_error(dca_absorb(node, raw(0)), "DPD_ERR_MALFORMED")
    expect_dpdist_error(dca_absorb(node, c(s$node0, as.raw(0))), "DPD_ERR_MALFORMED")
    expect_dpdist_error(dca_wire_inspect(s$node1[1:5]), "DPD_ERR_MALFORMED")
    expect_dpdist_error(dca_absorb(node, s$node1), "DPD_ERR_UNKNOWN_NODE")
    other_round <- dca_config_exact(2, 4, 2, 1, 3, 10, mode = "seed")
    s2 <- dca_shard(dca_client(other_round, 1, rng), c(1, 2, 3))
    expect_dpdist_error(dca_absorb(node, s2$node0), "DPD_ERR_WRONG_ROUND")
    expect_dpdist_error(dca_absorb(node, "not bytes"), "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(identical(dca_received(node)$client, 0)) # none of the failures changed the node

    expect_dpdist_error(dca_node(cfg, 2), "DPD_ERR_UNKNOWN_NODE")
    expect_dpdist_error(dca_absorb(cfg, s$node0), "DPD_ERR_INVALID_ARGUMENT") # wrong handle
    stopifnot(inherits(tryCatch(dca_config_exact(1, 4, 2, 1, 3, 10, mode = "bogus"),
                                error = function(e) e), "error"))
    expect_dpdist_error(dca_config_exact(1, 4, 1, 1, 3, 10), "DPD_ERR_INVALID_ARGUMENT") # M < 2
    expect_dpdist_error(dca_config_exact(1, 4, 2, 1, 3, NaN), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(dca_config_exact(1, 4, 2, 4, 3, 10), "DPD_ERR_INVALID_ARGUMENT") # T >= N
    expect_dpdist_error(dca_config_exact(-1, 4, 2, 1, 3, 10), "DPD_ERR_INVALID_ARGUMENT")
  },

  a_private_round_never_silently_becomes_an_exact_sum = function() {
    # sigma = 0 (what an unchecked failed calibration leaves), negative, NA or missing: refused,
    # and the message names the explicitly NON-PRIVATE constructor.
    for (bad in list(0, -1, NA_real_, NaN)) {
      e <- expect_dpdist_error(dca_config(1, 10, 2, 1, 3, 1, noise_sigma_total = bad),
                               "DPD_ERR_INVALID_PRIVACY_PARAMETER")
      stopifnot(grepl("dca_config_exact|dpd_round_config_new_exact", conditionMessage(e)))
    }
    e <- expect_dpdist_error(dca_config(1, 10, 2, 1, 3, 1), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    stopifnot(grepl("dca_config_exact", conditionMessage(e)))
    x <- matrix(0, nrow = 10, ncol = 2)
    expect_dpdist_error(dca_simulate_round(x, bound = 1), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(dca_simulate_round(x, bound = 1, sigma_total = 1, non_private = TRUE),
                        "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_near(dca_config_info(dca_config(1, 10, 2, 1, 3, 1, noise_sigma_total = 2))$sigma_client,
                2 / sqrt(8), 1e-15)
    stopifnot(grepl("NON-PRIVATE", capture.output(print(dca_config_exact(1, 10, 2, 1, 3, 1)))))
  },

  simulated_round_equals_the_plain_sum = function() {
    x <- matrix(seq(-1, 1, length.out = 150), nrow = 50, ncol = 3)
    for (mode in c("seed", "full")) {
      r <- dca_simulate_round(x, n_nodes = 3, max_dropped = 2, mode = mode, bound = 1,
                              rng = dpdist_rng(insecure_seed = 6),
                              non_private = TRUE)
      expect_near(r$sum, colSums(x), quantum(r, 50), paste(mode, "simulated sum"))
      r <- dca_simulate_round(x, n_nodes = 3, max_dropped = 2, mode = mode, bound = 1,
                              dropped = c(0, 7), rng = dpdist_rng(insecure_seed = 6),
                              non_private = TRUE)
      stopifnot(r$n_included == 48)
      expect_near(r$sum, colSums(x[-c(1, 8), ]), quantum(r, 48), paste(mode, "with dropouts"))
    }
    expect_dpdist_error(dca_simulate_round(x, max_dropped = 1, bound = 1, dropped = c(0, 7),
                                           non_private = TRUE),
                        "DPD_ERR_TOO_MANY_DROPPED")
    expect_dpdist_error(dca_simulate_round(x, bound = 0.5, non_private = TRUE), "DPD_ERR_OVERFLOW")
    y <- x
    y[3, 2] <- NaN
    expect_dpdist_error(dca_simulate_round(y, bound = 1, non_private = TRUE), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(dca_simulate_round(x, non_private = TRUE), "DPD_ERR_INVALID_ARGUMENT") # bound required
    expect_dpdist_error(dca_simulate_round(1:3, bound = 1, non_private = TRUE), "DPD_ERR_INVALID_ARGUMENT")
  },

  noisy_round_carries_the_calibrated_noise = function() {
    # N = 20, T = 2: each client adds sigma_total / sqrt(17); the released sum over 20 clients
    # carries sigma_client * sqrt(20). Over d = 2000 coordinates of zero input the sample sd is
    # within 5.3 * sigma / sqrt(2 d) = 8.4 % of it (alpha ~1e-7; the seed is fixed anyway).
    x <- matrix(0, nrow = 20, ncol = 2000)
    r <- dca_simulate_round(x, n_nodes = 2, max_dropped = 2, sigma_total = 1.5, bound = 1,
                            rng = dpdist_rng(insecure_seed = 9))
    expect_near(r$noise_sigma_client, 1.5 / sqrt(17), 1e-12)
    expect_near(r$noise_sigma_released, 1.5 / sqrt(17) * sqrt(20), 1e-12)
    stopifnot(abs(sd(r$sum) / r$noise_sigma_released - 1) < 0.084, abs(mean(r$sum)) < 0.2)
    # Same insecure seed, same noise; the OS generator gives other noise.
    r2 <- dca_simulate_round(x, n_nodes = 2, max_dropped = 2, sigma_total = 1.5, bound = 1,
                             rng = dpdist_rng(insecure_seed = 9))
    stopifnot(identical(r$sum, r2$sum))
    r3 <- dca_simulate_round(x, n_nodes = 2, max_dropped = 2, sigma_total = 1.5, bound = 1)
    stopifnot(!identical(r$sum, r3$sum))
  }
))

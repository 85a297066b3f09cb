/* A whole DCA round driven from C: several clients, M compute nodes, both share modes, a client
 * that drops out half-way, with and without DP noise; a client that shards twice with its
 * attempts split between the nodes; round ids reused with another configuration; plus the
 * in-process simulation, the codec and the kernels. The expected sums are computed here in plain
 * C from the inputs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { N = 6, M = 3, T = 1, D = 5 };
static const double BOUND = 10.0;

static double value(size_t client, size_t j) {
    return ((double)((client * 7 + j * 3) % 19) - 9.0) * 0.37 + 0.001 * (double)client;
}

/* Copies node k's message out of `shares` into a fresh malloc'd buffer (size query first). */
static uint8_t *message_for(const dpd_shares *shares, uint32_t k, size_t *len) {
    size_t need = 0;
    CHECK(dpd_shares_message(shares, k, NULL, 0, &need) == DPD_ERR_BUFFER_TOO_SMALL);
    uint8_t *buf = malloc(need);
    CHECK_OK(dpd_shares_message(shares, k, buf, need, len));
    CHECK(*len == need);
    return buf;
}

/* The (client, shard) pairs every one of the M nodes received, into ids/shards; returns how many.
 * Node 0's list, kept where every other node lists the same client with the same shard id. */
static size_t agree(dpd_node *const nodes[M], uint64_t ids[N], uint64_t shards[N]) {
    size_t n = 0;
    CHECK_OK(dpd_node_received(nodes[0], ids, shards, N, &n));
    for (uint32_t k = 1; k < M; k++) {
        uint64_t got[N], got_shards[N];
        size_t n_got = 0;
        CHECK_OK(dpd_node_received(nodes[k], got, got_shards, N, &n_got));
        size_t kept = 0;
        for (size_t a = 0; a < n; a++) {
            for (size_t b = 0; b < n_got; b++) {
                if (ids[a] == got[b] && shards[a] == got_shards[b]) {
                    ids[kept] = ids[a];
                    shards[kept++] = shards[a];
                    break;
                }
            }
        }
        n = kept;
    }
    return n;
}

/* Shards client `i` (value(i, .)) once and copies node k's message into msgs[k] (malloc'd). */
static uint64_t shard_client(dpd_round_config *config, dpd_rng *rng, size_t i, uint8_t *msgs[M],
                             size_t lens[M]) {
    double x[D];
    for (size_t j = 0; j < D; j++) x[j] = value(i, j);
    dpd_client *client = NULL;
    dpd_shares *shares = NULL;
    CHECK_OK(dpd_client_new(config, i, rng, &client));
    CHECK_OK(dpd_client_shard(client, x, D, &shares));
    uint64_t shard = 0;
    CHECK_OK(dpd_shares_shard_id(shares, &shard));
    for (uint32_t k = 0; k < M; k++) msgs[k] = message_for(shares, k, &lens[k]);
    dpd_shares_free(shares);
    dpd_client_free(client);
    return shard;
}

/* Client 1 shards twice (a retry): node 0 absorbs attempt 1, nodes 1 and 2 attempt 2. The pair
 * agreement leaves client 1 out and the release is the plain sum of the others; agreeing on ids
 * alone (each node using its own attempt) is refused by the aggregator; retracting the other
 * attempt is refused. Never a wrong release. */
static void mixed_retry(uint32_t mode) {
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new_exact(43, N, M, T, D, BOUND, mode, DPD_FRAC_BITS_AUTO, &config));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(8, &rng));
    dpd_node *nodes[M] = {NULL};
    for (uint32_t k = 0; k < M; k++) CHECK_OK(dpd_node_new(config, k, &nodes[k]));
    uint8_t *first[M], *retry[M];
    size_t first_len[M], retry_len[M];
    for (size_t i = 0; i < N; i++) {
        if (i == 1) continue;
        uint8_t *msgs[M];
        size_t lens[M];
        shard_client(config, rng, i, msgs, lens);
        for (uint32_t k = 0; k < M; k++) {
            CHECK_OK(dpd_node_absorb(nodes[k], msgs[k], lens[k]));
            free(msgs[k]);
        }
    }
    uint64_t first_shard = shard_client(config, rng, 1, first, first_len);
    uint64_t retry_shard = shard_client(config, rng, 1, retry, retry_len);
    CHECK(first_shard != retry_shard);
    CHECK_OK(dpd_node_absorb(nodes[0], first[0], first_len[0]));
    for (uint32_t k = 1; k < M; k++) CHECK_OK(dpd_node_absorb(nodes[k], retry[k], retry_len[k]));

    /* Agreeing on client ids only, each node with the attempt it holds: the aggregator sees two
     * attempts of client 1 and refuses. */
    dpd_aggregator *aggregator = NULL;
    CHECK_OK(dpd_aggregator_new(config, &aggregator));
    for (uint32_t k = 0; k < M; k++) {
        uint64_t ids[N], shards[N];
        size_t n = 0;
        CHECK_OK(dpd_node_received(nodes[k], ids, shards, N, &n));
        CHECK(n == N);
        dpd_node_sum *sum = NULL;
        CHECK_OK(dpd_node_finalize(nodes[k], ids, shards, n, &sum));
        if (k == 0) {
            CHECK_OK(dpd_aggregator_add(aggregator, sum));
        } else {
            CHECK_FAILS(dpd_aggregator_add(aggregator, sum), DPD_ERR_INVALID_ARGUMENT,
                        "sharded more than once");
        }
        dpd_node_sum_free(sum);
    }
    size_t out_len = 0;
    double out[D];
    CHECK_FAILS(dpd_aggregator_release(aggregator, out, D, &out_len, NULL),
                DPD_ERR_INVALID_STATE, "node sums");
    dpd_aggregator_free(aggregator);

    /* Node 0 handed node 1's pairs (attempt 2 of client 1) refuses to finalize. */
    {
        uint64_t ids[N], shards[N];
        size_t n = 0;
        CHECK_OK(dpd_node_received(nodes[1], ids, shards, N, &n));
        dpd_node_sum *sum = (dpd_node_sum *)0x1;
        CHECK_FAILS(dpd_node_finalize(nodes[0], ids, shards, n, &sum), DPD_ERR_INVALID_ARGUMENT,
                    "sharded more than once");
        CHECK(sum == (dpd_node_sum *)0x1);
    }
    /* Retracting the attempt node 0 never absorbed is refused. */
    CHECK_FAILS(dpd_node_retract(nodes[0], retry[0], retry_len[0]), DPD_ERR_INVALID_ARGUMENT,
                "shard id");

    /* The pair agreement excludes client 1; its full shares are retracted; the release is the
     * plain sum of the other clients. */
    uint64_t agreed[N], agreed_shards[N];
    size_t n_agreed = agree(nodes, agreed, agreed_shards);
    CHECK(n_agreed == N - 1);
    for (size_t a = 0; a < n_agreed; a++) CHECK(agreed[a] != 1);
    CHECK_OK(dpd_node_retract(nodes[0], first[0], first_len[0]));
    if (mode == DPD_SHARE_MODE_FULL) {
        for (uint32_t k = 1; k < M; k++) CHECK_OK(dpd_node_retract(nodes[k], retry[k], retry_len[k]));
    }
    CHECK_OK(dpd_aggregator_new(config, &aggregator));
    for (uint32_t k = 0; k < M; k++) {
        dpd_node_sum *sum = NULL;
        CHECK_OK(dpd_node_finalize(nodes[k], agreed, agreed_shards, n_agreed, &sum));
        CHECK_OK(dpd_aggregator_add(aggregator, sum));
        dpd_node_sum_free(sum);
    }
    uint32_t frac_bits = 0;
    CHECK_OK(dpd_round_config_info(config, &frac_bits, NULL, NULL));
    CHECK_OK(dpd_aggregator_release(aggregator, out, D, &out_len, NULL));
    for (size_t j = 0; j < D; j++) {
        double plain = 0.0;
        for (size_t i = 0; i < N; i++)
            if (i != 1) plain += value(i, j);
        CHECK(fabs(out[j] - plain) <= (double)N * ldexp(1.0, -(int)frac_bits) + 1e-12);
    }
    dpd_aggregator_free(aggregator);
    for (uint32_t k = 0; k < M; k++) {
        free(first[k]);
        free(retry[k]);
        dpd_node_free(nodes[k]);
    }
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

/* Round id 44 used again with another configuration (N differs): the ledger refuses it, and
 * a message or node sum of the old round is refused by the new round's node and aggregator. */
static void reused_round_id(void) {
    dpd_round_config *old_config = NULL, *new_config = NULL, *again = NULL;
    CHECK_OK(dpd_round_config_new_exact(44, N, M, T, D, BOUND, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &old_config));
    uint32_t frac_bits = 0;
    CHECK_OK(dpd_round_config_info(old_config, &frac_bits, NULL, NULL));
    CHECK_OK(dpd_round_config_new_exact(44, N + 1, M, T, D, BOUND, DPD_SHARE_MODE_SEED, frac_bits,
                                        &new_config));
    CHECK_OK(dpd_round_config_new_exact(44, N, M, T, D, BOUND, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &again));
    dpd_round_ledger *ledger = NULL;
    CHECK_OK(dpd_round_ledger_new(&ledger));
    uint32_t is_new = 7;
    CHECK_OK(dpd_round_ledger_admit(ledger, old_config, &is_new));
    CHECK(is_new == 1);
    CHECK_OK(dpd_round_ledger_admit(ledger, again, &is_new));
    CHECK(is_new == 0);
    is_new = 7;
    CHECK_FAILS(dpd_round_ledger_admit(ledger, new_config, &is_new), DPD_ERR_WRONG_ROUND,
                "already used with another configuration");
    CHECK(is_new == 7);
    CHECK_OK(dpd_round_ledger_admit(ledger, again, NULL)); /* unchanged by the refusal */

    /* Nodes and aggregators created through the ledger: the old round's are created, the
     * reused id's are refused and nothing is created; a node index outside 0..M records
     * nothing. */
    dpd_node *admitted_node = NULL, *refused_node = NULL;
    dpd_aggregator *admitted_agg = NULL, *refused_agg = NULL;
    CHECK_OK(dpd_node_new_admitted(ledger, again, 1, &admitted_node));
    CHECK(admitted_node != NULL);
    CHECK_OK(dpd_aggregator_new_admitted(ledger, again, &admitted_agg));
    CHECK(admitted_agg != NULL);
    CHECK_FAILS(dpd_node_new_admitted(ledger, new_config, 0, &refused_node), DPD_ERR_WRONG_ROUND,
                "already used with another configuration");
    CHECK(refused_node == NULL);
    CHECK_FAILS(dpd_aggregator_new_admitted(ledger, new_config, &refused_agg),
                DPD_ERR_WRONG_ROUND, "already used with another configuration");
    CHECK(refused_agg == NULL);
    dpd_round_ledger *fresh = NULL;
    CHECK_OK(dpd_round_ledger_new(&fresh));
    CHECK_FAILS(dpd_node_new_admitted(fresh, new_config, M, &refused_node), DPD_ERR_UNKNOWN_NODE,
                "unknown node");
    CHECK_OK(dpd_round_ledger_admit(fresh, old_config, &is_new)); /* the failure recorded nothing */
    CHECK(is_new == 1);
    CHECK_FAILS(dpd_node_new_admitted(NULL, again, 0, &refused_node), DPD_ERR_NULL_POINTER,
                "ledger");
    CHECK_FAILS(dpd_aggregator_new_admitted(ledger, NULL, &refused_agg), DPD_ERR_NULL_POINTER,
                "config");
    dpd_node_free(admitted_node);
    dpd_aggregator_free(admitted_agg);
    dpd_round_ledger_free(fresh);
    dpd_round_ledger_free(ledger);
    dpd_round_ledger_free(NULL);

    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(9, &rng));
    uint8_t *msgs[M];
    size_t lens[M];
    shard_client(old_config, rng, 0, msgs, lens);
    dpd_node *node = NULL;
    CHECK_OK(dpd_node_new(new_config, 1, &node));
    CHECK_FAILS(dpd_node_absorb(node, msgs[1], lens[1]), DPD_ERR_WRONG_ROUND, "reused");
    size_t n = 99;
    CHECK_OK(dpd_node_received(node, NULL, NULL, 0, &n));
    CHECK(n == 0);

    /* An old node sum (node 0 of the old round, all N clients) is refused by the new round. */
    dpd_node *old_node = NULL;
    CHECK_OK(dpd_node_new(old_config, 0, &old_node));
    CHECK_OK(dpd_node_absorb(old_node, msgs[0], lens[0]));
    for (size_t i = 1; i < N; i++) {
        uint8_t *more[M];
        size_t more_lens[M];
        shard_client(old_config, rng, i, more, more_lens);
        CHECK_OK(dpd_node_absorb(old_node, more[0], more_lens[0]));
        for (uint32_t k = 0; k < M; k++) free(more[k]);
    }
    uint64_t ids[N], shards[N];
    CHECK_OK(dpd_node_received(old_node, ids, shards, N, &n));
    dpd_node_sum *old_sum = NULL;
    CHECK_OK(dpd_node_finalize(old_node, ids, shards, n, &old_sum));
    size_t sum_len = 0;
    CHECK(dpd_node_sum_to_bytes(old_sum, NULL, 0, &sum_len) == DPD_ERR_BUFFER_TOO_SMALL);
    uint8_t *sum_bytes = malloc(sum_len);
    CHECK_OK(dpd_node_sum_to_bytes(old_sum, sum_bytes, sum_len, &sum_len));
    dpd_node_sum *decoded = (dpd_node_sum *)0x1;
    CHECK_FAILS(dpd_node_sum_from_bytes(new_config, sum_bytes, sum_len, &decoded),
                DPD_ERR_WRONG_ROUND, "reused");
    CHECK(decoded == (dpd_node_sum *)0x1);
    dpd_aggregator *aggregator = NULL;
    CHECK_OK(dpd_aggregator_new(new_config, &aggregator));
    CHECK_FAILS(dpd_aggregator_add(aggregator, old_sum), DPD_ERR_WRONG_ROUND, "reused");
    dpd_aggregator_free(aggregator);

    free(sum_bytes);
    dpd_node_sum_free(old_sum);
    dpd_node_free(old_node);
    dpd_node_free(node);
    for (uint32_t k = 0; k < M; k++) free(msgs[k]);
    dpd_rng_free(rng);
    dpd_round_config_free(again);
    dpd_round_config_free(new_config);
    dpd_round_config_free(old_config);
}

/* One round. `dropout` (a client id, or -1) sends its share to node 0 only and then vanishes,
 * so the nodes' received sets differ and node 0 must retract it. */
static void run_round(uint32_t mode, double sigma_total, int dropout) {
    dpd_round_config *config = NULL;
    if (sigma_total == 0.0) {
        CHECK_OK(dpd_round_config_new_exact(42, N, M, T, D, BOUND, mode, DPD_FRAC_BITS_AUTO,
                                            &config));
    } else {
        CHECK_OK(dpd_round_config_new(42, N, M, T, D, BOUND, mode, sigma_total,
                                      DPD_FRAC_BITS_AUTO, &config));
    }
    uint32_t frac_bits = 0;
    double sigma_client = -1.0;
    CHECK_OK(dpd_round_config_info(config, &frac_bits, &sigma_client, NULL));
    if (sigma_total == 0.0) {
        CHECK(sigma_client == 0.0);
    } else {
        CHECK(fabs(sigma_client - sigma_total / sqrt((double)(N - T - 1))) < 1e-12);
    }

    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(7, &rng));
    dpd_node *nodes[M] = {NULL};
    for (uint32_t k = 0; k < M; k++) {
        CHECK_OK(dpd_node_new(config, k, &nodes[k]));
    }

    uint8_t *dropout_msg = NULL;
    size_t dropout_len = 0;
    for (size_t i = 0; i < N; i++) {
        double x[D];
        for (size_t j = 0; j < D; j++) x[j] = value(i, j);
        dpd_client *client = NULL;
        dpd_shares *shares = NULL;
        CHECK_OK(dpd_client_new(config, i, rng, &client));
        CHECK_OK(dpd_client_shard(client, x, D, &shares));
        size_t count = 0;
        CHECK_OK(dpd_shares_count(shares, &count));
        CHECK(count == M);
        uint64_t shard = 0;
        CHECK_OK(dpd_shares_shard_id(shares, &shard));
        for (uint32_t k = 0; k < M; k++) {
            size_t len = 0;
            uint8_t *msg = message_for(shares, k, &len);
            size_t expected = 60 + ((k == 0 || mode == DPD_SHARE_MODE_FULL) ? 8 * D : 16);
            CHECK(len == expected);
            dpd_wire_header header;
            CHECK_OK(dpd_wire_inspect(msg, len, &header));
            CHECK(header.round == 42 && header.client == i && header.node == k &&
                  header.dim == D && header.frac_bits == frac_bits && header.shard == shard);
            if ((int)i == dropout && k > 0) {
                free(msg); /* lost: the client dropped out */
                continue;
            }
            CHECK_OK(dpd_node_absorb(nodes[k], msg, len));
            if ((int)i == dropout) {
                dropout_msg = msg; /* node 0 must retract it later */
                dropout_len = len;
            } else {
                free(msg);
            }
        }
        dpd_shares_free(shares);
        dpd_client_free(client);
    }

    /* Agreement: the (client, shard) pairs every node received. */
    uint64_t agreed[N], agreed_shards[N];
    size_t n_agreed = agree(nodes, agreed, agreed_shards);
    if (dropout >= 0) {
        CHECK(n_agreed == N - 1);
        /* Node 0 still holds the full share of the dropped client: finalizing now is refused. */
        dpd_node_sum *refused = (dpd_node_sum *)0x1;
        CHECK_FAILS(dpd_node_finalize(nodes[0], agreed, agreed_shards, n_agreed, &refused),
                    DPD_ERR_INVALID_STATE, "retract");
        CHECK(refused == (dpd_node_sum *)0x1);
        CHECK_OK(dpd_node_retract(nodes[0], dropout_msg, dropout_len));
        free(dropout_msg);
    }

    dpd_aggregator *aggregator = NULL;
    CHECK_OK(dpd_aggregator_new(config, &aggregator));
    for (uint32_t k = 0; k < M; k++) {
        dpd_node_sum *sum = NULL;
        CHECK_OK(dpd_node_finalize(nodes[k], agreed, agreed_shards, n_agreed, &sum));
        /* Through the wire, as between processes: decoded against the round. */
        size_t sum_len = 0;
        CHECK(dpd_node_sum_to_bytes(sum, NULL, 0, &sum_len) == DPD_ERR_BUFFER_TOO_SMALL);
        uint8_t *sum_bytes = malloc(sum_len);
        CHECK_OK(dpd_node_sum_to_bytes(sum, sum_bytes, sum_len, &sum_len));
        dpd_node_sum *received = NULL;
        CHECK_OK(dpd_node_sum_from_bytes(config, sum_bytes, sum_len, &received));
        CHECK_OK(dpd_aggregator_add(aggregator, received));
        dpd_node_sum_free(received);
        free(sum_bytes);
        dpd_node_sum_free(sum);
        dpd_node_free(nodes[k]);
    }

    size_t len = 0;
    CHECK(dpd_aggregator_release(aggregator, NULL, 0, &len, NULL) == DPD_ERR_BUFFER_TOO_SMALL);
    CHECK(len == D);
    double released[D];
    dpd_release_info info;
    CHECK_OK(dpd_aggregator_release(aggregator, released, D, &len, &info));
    CHECK(len == D);
    CHECK(info.n_clients == N && info.n_included == n_agreed && info.max_dropped == T);
    CHECK(info.frac_bits == frac_bits);

    /* The plain sum over the agreed clients, in C. */
    double quantum = ldexp(1.0, -(int)frac_bits);
    for (size_t j = 0; j < D; j++) {
        double plain = 0.0;
        for (size_t a = 0; a < n_agreed; a++) plain += value((size_t)agreed[a], j);
        if (sigma_total == 0.0) {
            /* Each encode rounds by at most half a grid step. */
            double tol = (double)N * quantum + 1e-12 * (1.0 + fabs(plain));
            CHECK(fabs(released[j] - plain) <= tol);
            CHECK(info.noise_sigma_released == 0.0);
        } else {
            /* Noise N(0, sigma_client^2 * n_included): 7 sigma (fixed seed, deterministic). */
            double expected_sigma = sigma_client * sqrt((double)n_agreed);
            CHECK(fabs(info.noise_sigma_released - expected_sigma) < 1e-12);
            CHECK(fabs(released[j] - plain) <= 7.0 * expected_sigma);
            CHECK(released[j] != plain);
        }
    }
    dpd_aggregator_free(aggregator);
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

static void simulated_round(void) {
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new_exact(3, N, M, T, D, BOUND, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &config));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_os(&rng));
    double inputs[N * D];
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < D; j++) inputs[i * D + j] = value(i, j);
    uint64_t dropped[1] = {2};
    double sum[D];
    size_t len = 0;
    dpd_release_info info;
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, dropped, 1, rng, sum, D, &len, &info));
    CHECK(len == D && info.n_included == N - 1);
    double quantum = ldexp(1.0, -(int)info.frac_bits);
    for (size_t j = 0; j < D; j++) {
        double plain = 0.0;
        for (size_t i = 0; i < N; i++)
            if (i != 2) plain += value(i, j);
        CHECK(fabs(sum[j] - plain) <= (double)N * quantum + 1e-12 * (1.0 + fabs(plain)));
    }
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

/* The size query of a noisy call must not run it: with the same fixed seed, "size query, then
 * fill" (and "too small, then fill") must release exactly the sum a direct fill releases. Were the
 * round (or just its randomness) run for the size query, the fill would draw the next stream and
 * the sums would differ. The query also leaves the output untouched. */
static void size_query_runs_nothing(void) {
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new(5, N, M, T, D, BOUND, DPD_SHARE_MODE_SEED, 1.5,
                                  DPD_FRAC_BITS_AUTO, &config));
    double inputs[N * D];
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < D; j++) inputs[i * D + j] = value(i, j);
    double direct[D], queried[D], refused[D];
    size_t len = 0;
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(77, &rng));
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, direct, D, &len, NULL));
    dpd_rng_free(rng);

    CHECK_OK(dpd_rng_new_insecure_fixed_seed(77, &rng));
    len = 0;
    CHECK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, NULL, 0, &len, NULL) ==
          DPD_ERR_BUFFER_TOO_SMALL);
    CHECK(len == D);
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, queried, D, &len, NULL));
    dpd_rng_free(rng);

    CHECK_OK(dpd_rng_new_insecure_fixed_seed(77, &rng));
    refused[0] = -12345.0;
    CHECK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, refused, 1, &len, NULL) ==
          DPD_ERR_BUFFER_TOO_SMALL);
    CHECK(len == D && refused[0] == -12345.0);
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, refused, D, &len, NULL));
    dpd_rng_free(rng);

    for (size_t j = 0; j < D; j++) {
        CHECK(queried[j] == direct[j]);
        CHECK(refused[j] == direct[j]);
    }
    /* A fresh draw from the same seed differs (the noise is really there): otherwise the
     * comparison above could not fail. */
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(77, &rng));
    double first[D], second[D];
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, first, D, &len, NULL));
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, second, D, &len, NULL));
    int differs = 0;
    for (size_t j = 0; j < D; j++) differs |= first[j] != second[j];
    CHECK(differs);
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

static void codec(void) {
    uint32_t f = 0;
    CHECK_OK(dpd_fixed_point_frac_bits_for_sum(1000, 4.0, 0.0, &f));
    /* 1000 * 4 * 2^f + 1000 < 2^63: 4000 * 2^51 < 4096 * 2^51 = 2^63, but 4000 * 2^52 > 2^63. */
    CHECK(f == 51);
    const double x[4] = {1.25, -3.5, 0.0, 3.999};
    uint64_t enc[4];
    size_t n = 0;
    CHECK_OK(dpd_fixed_point_encode(20, 4.0, x, 4, enc, 4, &n));
    CHECK(n == 4);
    CHECK(enc[0] == (uint64_t)(1.25 * 1048576.0));
    CHECK(enc[1] == (uint64_t)0 - (uint64_t)(3.5 * 1048576.0)); /* two's complement */
    CHECK(enc[2] == 0);
    double back[4];
    CHECK_OK(dpd_fixed_point_decode(20, enc, 4, back, 4, &n));
    for (size_t i = 0; i < 4; i++) CHECK(fabs(back[i] - x[i]) <= 0.5 / 1048576.0);
}

static void kernels(void) {
    enum { L = 1003 }; /* not a multiple of any lane count */
    static uint64_t acc[3][L], src[L], expected_add[L], expected_sub[L];
    uint64_t state = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < L; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        uint64_t a = state;
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        src[i] = state;
        for (int v = 0; v < 3; v++) acc[v][i] = a;
        expected_add[i] = a + src[i]; /* unsigned arithmetic wraps mod 2^64 in C */
        expected_sub[i] = a - src[i];
    }
    CHECK_OK(dpd_wrapping_add_u64(acc[0], src, L));
    CHECK_OK(dpd_wrapping_add_u64_scalar(acc[1], src, L));
    CHECK_OK(dpd_wrapping_add_u64_wide(acc[2], src, L));
    for (int v = 0; v < 3; v++) CHECK(memcmp(acc[v], expected_add, sizeof expected_add) == 0);
    CHECK_OK(dpd_wrapping_sub_u64(acc[0], src, L)); /* back to a */
    CHECK_OK(dpd_wrapping_sub_u64(acc[0], src, L)); /* a - src */
    CHECK(memcmp(acc[0], expected_sub, sizeof expected_sub) == 0);
    CHECK_OK(dpd_wrapping_add_u64(NULL, NULL, 0)); /* the empty array */
    dpd_kernel_path path = dpd_kernel_selected_path();
    printf("kernel path: %s\n", dpd_kernel_path_name((uint32_t)path));
    CHECK(strcmp(dpd_kernel_path_name((uint32_t)path), "unknown") != 0);
}

/* A ledger saved with dpd_round_ledger_entries and restored with dpd_round_ledger_admit_digest
 * (a restarted party) still refuses a reused round id. */
static void ledger_survives_a_restart(void) {
    dpd_round_config *round44 = NULL, *round45 = NULL, *reused44 = NULL;
    CHECK_OK(dpd_round_config_new_exact(45, N, M, T, D, BOUND, DPD_SHARE_MODE_FULL,
                                        DPD_FRAC_BITS_AUTO, &round45));
    CHECK_OK(dpd_round_config_new_exact(44, N, M, T, D, BOUND, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &round44));
    CHECK_OK(dpd_round_config_new_exact(44, N, M, T, D + 1, BOUND, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &reused44));
    dpd_round_ledger *ledger = NULL;
    CHECK_OK(dpd_round_ledger_new(&ledger));
    CHECK_OK(dpd_round_ledger_admit(ledger, round45, NULL));
    CHECK_OK(dpd_round_ledger_admit(ledger, round44, NULL));

    /* Size query, a too small buffer (nothing written), then the entries in increasing id. */
    size_t len = 0;
    CHECK_FAILS(dpd_round_ledger_entries(ledger, NULL, NULL, 0, &len), DPD_ERR_BUFFER_TOO_SMALL,
                "needs 2");
    CHECK(len == 2);
    uint64_t rounds[4] = {9, 9, 9, 9};
    uint8_t digests[4 * DPD_CONFIG_DIGEST_LEN];
    memset(digests, 0xAB, sizeof digests);
    CHECK_FAILS(dpd_round_ledger_entries(ledger, rounds, digests, 1, &len),
                DPD_ERR_BUFFER_TOO_SMALL, "needs 2");
    CHECK(rounds[0] == 9 && digests[0] == 0xAB);
    CHECK_OK(dpd_round_ledger_entries(ledger, rounds, digests, 4, &len));
    CHECK(len == 2 && rounds[0] == 44 && rounds[1] == 45 && rounds[2] == 9);
    CHECK(memcmp(digests, digests + DPD_CONFIG_DIGEST_LEN, DPD_CONFIG_DIGEST_LEN) != 0);
    CHECK(digests[2 * DPD_CONFIG_DIGEST_LEN] == 0xAB);
    CHECK_FAILS(dpd_round_ledger_entries(ledger, rounds, digests, 4, NULL), DPD_ERR_NULL_POINTER,
                "out_len");
    dpd_round_ledger_free(ledger);

    /* The restarted party: the saved pairs restore what the ledger refuses and admits. */
    dpd_round_ledger *restored = NULL;
    CHECK_OK(dpd_round_ledger_new(&restored));
    uint32_t is_new = 7;
    for (size_t i = 0; i < len; i++) {
        CHECK_OK(dpd_round_ledger_admit_digest(restored, rounds[i],
                                               digests + i * DPD_CONFIG_DIGEST_LEN,
                                               DPD_CONFIG_DIGEST_LEN, &is_new));
        CHECK(is_new == 1);
    }
    CHECK_OK(dpd_round_ledger_admit(restored, round44, &is_new));
    CHECK(is_new == 0);
    CHECK_FAILS(dpd_round_ledger_admit(restored, reused44, &is_new), DPD_ERR_WRONG_ROUND,
                "already used with another configuration");
    uint8_t other[DPD_CONFIG_DIGEST_LEN] = {1};
    CHECK_FAILS(dpd_round_ledger_admit_digest(restored, 45, other, sizeof other, NULL),
                DPD_ERR_WRONG_ROUND, "already used with another configuration");
    CHECK_FAILS(dpd_round_ledger_admit_digest(restored, 46, other, 15, NULL),
                DPD_ERR_LENGTH_MISMATCH, "16 bytes");
    CHECK_FAILS(dpd_round_ledger_admit_digest(restored, 46, NULL, 16, NULL), DPD_ERR_NULL_POINTER,
                "digest");
    CHECK_FAILS(dpd_round_ledger_admit_digest(NULL, 46, other, 16, NULL), DPD_ERR_NULL_POINTER,
                "ledger");
    /* None of the refusals recorded round 46. */
    CHECK_OK(dpd_round_ledger_entries(restored, rounds, digests, 4, &len));
    CHECK(len == 2);
    dpd_round_ledger_free(restored);
    dpd_round_config_free(round44);
    dpd_round_config_free(round45);
    dpd_round_config_free(reused44);
}

int main(void) {
    CHECK(dpd_abi_version() == DPD_ABI_VERSION);
    printf("dpdist %s (ABI %u)\n", dpd_version(), (unsigned)dpd_abi_version());
    run_round(DPD_SHARE_MODE_FULL, 0.0, -1);
    run_round(DPD_SHARE_MODE_SEED, 0.0, -1);
    run_round(DPD_SHARE_MODE_FULL, 0.0, 4);
    run_round(DPD_SHARE_MODE_SEED, 0.0, 4);
    run_round(DPD_SHARE_MODE_SEED, 1.5, 4);
    run_round(DPD_SHARE_MODE_FULL, 1.5, -1);
    mixed_retry(DPD_SHARE_MODE_SEED);
    mixed_retry(DPD_SHARE_MODE_FULL);
    reused_round_id();
    ledger_survives_a_restart();
    simulated_round();
    size_query_runs_nothing();
    codec();
    kernels();
    return check_exit("test_dca");
}

/* Every bad input returns its documented status, leaves out-pointers untouched, and leaves a
 * last-error message that names the function and says what was wrong. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 4, M = 2, T = 1, D = 3 };

static dpd_round_config *make_config(uint64_t round, uint32_t mode) {
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new_exact(round, N, M, T, D, 1.0, mode, DPD_FRAC_BITS_AUTO,
                                        &config));
    return config;
}

/* The wire bytes client `id` of `config` sends node `k` (malloc'd). */
static uint8_t *share_bytes(const dpd_round_config *config, dpd_rng *rng, uint64_t id, uint32_t k,
                            size_t *len) {
    const double x[D] = {0.5, -0.25, 1.0};
    dpd_client *client = NULL;
    dpd_shares *shares = NULL;
    CHECK_OK(dpd_client_new(config, id, rng, &client));
    CHECK_OK(dpd_client_shard(client, x, D, &shares));
    CHECK(dpd_shares_message(shares, k, NULL, 0, len) == DPD_ERR_BUFFER_TOO_SMALL);
    uint8_t *bytes = malloc(*len);
    CHECK_OK(dpd_shares_message(shares, k, bytes, *len, len));
    dpd_shares_free(shares);
    dpd_client_free(client);
    return bytes;
}

static void threads(void) {
    /* First call of the process: builds the pool. */
    CHECK_OK(dpd_set_num_threads(2));
    size_t n = 0;
    CHECK_OK(dpd_num_threads(&n));
    CHECK(n == 2);
    CHECK_FAILS(dpd_set_num_threads(1), DPD_ERR_ALREADY_INITIALIZED, "already built with 2");
    CHECK_FAILS(dpd_num_threads(NULL), DPD_ERR_NULL_POINTER, "`out` is NULL");
}

static void last_error_api(void) {
    CHECK_FAILS(dpd_round_config_new(1, N, M, T, D, 1.0, 7, 0.0, DPD_FRAC_BITS_AUTO, NULL),
                DPD_ERR_NULL_POINTER, "`out` is NULL");
    size_t full = 0;
    CHECK_OK(dpd_last_error_message(NULL, 0, &full)); /* size query */
    CHECK(full == strlen("dpd_round_config_new: argument `out` is NULL"));
    char small[8];
    memset(small, 'x', sizeof small);
    size_t len = 0;
    CHECK_OK(dpd_last_error_message(small, sizeof small, &len));
    CHECK(len == full);                     /* full length reported ... */
    CHECK(small[7] == '\0');                /* ... truncated and NUL-terminated */
    CHECK(strcmp(small, "dpd_rou") == 0);
    CHECK(dpd_last_error_message(NULL, 4, &len) == DPD_ERR_NULL_POINTER);
    CHECK(strcmp(dpd_status_name(DPD_ERR_DUPLICATE_CLIENT), "DPD_ERR_DUPLICATE_CLIENT") == 0);
    CHECK(strcmp(dpd_status_name(12345), "DPD_UNKNOWN_STATUS") == 0);
}

static void config_errors(void) {
    dpd_round_config *config = (dpd_round_config *)0x1; /* must stay untouched on failure */
    CHECK_FAILS(dpd_round_config_new_exact(1, N, M, T, D, 1.0, 7, DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_ARGUMENT, "mode");
    CHECK_FAILS(dpd_round_config_new_exact(1, N, 1, T, D, 1.0, 0, DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_ARGUMENT, "n_nodes");
    CHECK_FAILS(dpd_round_config_new_exact(1, N, M, N, D, 1.0, 0, DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_ARGUMENT, "max_dropped");
    CHECK_FAILS(dpd_round_config_new_exact(1, N, M, T, D, NAN, 0, DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_NON_FINITE, "bound");
    /* Noise needs N - T - 1 >= 1 honest clients besides the observed one. */
    CHECK_FAILS(dpd_round_config_new(1, 2, M, 1, D, 1.0, 0, 1.0, DPD_FRAC_BITS_AUTO, &config),
                DPD_ERR_INVALID_ARGUMENT, "N - T - 1");
    /* With 52 explicit fractional bits one value of size 1000 < 2^10 fits in 2^63 but the sum
     * of 4 clients' (4000 * 2^52 > 2^63) does not. */
    CHECK_FAILS(dpd_round_config_new_exact(1, N, M, T, D, 1000.0, 0, 52, &config),
                DPD_ERR_OVERFLOW, "");
    /* A single value that cannot be encoded at all. */
    CHECK_FAILS(dpd_round_config_new_exact(1, N, M, T, D, 4096.0, 0, 52, &config),
                DPD_ERR_INVALID_ARGUMENT, "2^63");
    CHECK(config == (dpd_round_config *)0x1);
    uint32_t f = 99;
    CHECK_FAILS(dpd_fixed_point_frac_bits_for_sum(SIZE_MAX / 2, 1e300, 0.0, &f), DPD_ERR_OVERFLOW,
                "");
    CHECK(f == 99);
}

static void client_errors(dpd_rng *rng) {
    dpd_round_config *config = make_config(1, DPD_SHARE_MODE_SEED);
    dpd_client *client = (dpd_client *)0x1;
    CHECK_FAILS(dpd_client_new(config, N, rng, &client), DPD_ERR_INVALID_ARGUMENT, "unknown client");
    CHECK_FAILS(dpd_client_new(NULL, 0, rng, &client), DPD_ERR_NULL_POINTER, "`config`");
    CHECK_FAILS(dpd_client_new(config, 0, NULL, &client), DPD_ERR_NULL_POINTER, "`rng`");
    CHECK(client == (dpd_client *)0x1);
    CHECK_OK(dpd_client_new(config, 0, rng, &client));

    dpd_shares *shares = (dpd_shares *)0x1;
    const double ok[D] = {0.1, 0.2, 0.3};
    const double with_nan[D] = {0.1, NAN, 0.3};
    const double with_inf[D] = {0.1, 0.2, -INFINITY};
    const double too_big[D] = {0.1, 0.2, 1.5}; /* bound is 1.0 */
    CHECK_FAILS(dpd_client_shard(client, ok, D - 1, &shares), DPD_ERR_LENGTH_MISMATCH, "length");
    CHECK_FAILS(dpd_client_shard(client, NULL, D, &shares), DPD_ERR_NULL_POINTER, "`values`");
    CHECK_FAILS(dpd_client_shard(client, with_nan, D, &shares), DPD_ERR_NON_FINITE, "index 1");
    CHECK_FAILS(dpd_client_shard(client, with_inf, D, &shares), DPD_ERR_NON_FINITE, "index 2");
    CHECK_FAILS(dpd_client_shard(client, too_big, D, &shares), DPD_ERR_OVERFLOW, "bound");
    CHECK_FAILS(dpd_client_shard(client, ok, D, NULL), DPD_ERR_NULL_POINTER, "`out`");
    CHECK_FAILS(dpd_client_shard(NULL, ok, D, &shares), DPD_ERR_NULL_POINTER, "`client`");
    CHECK(shares == (dpd_shares *)0x1);

    CHECK_OK(dpd_client_shard(client, ok, D, &shares));
    uint8_t small[8] = {0};
    size_t len = 0;
    CHECK_FAILS(dpd_shares_message(shares, 0, small, sizeof small, &len),
                DPD_ERR_BUFFER_TOO_SMALL, "needs");
    CHECK(len == 60 + 8 * D); /* required size reported */
    CHECK(small[0] == 0);     /* buffer untouched */
    CHECK_FAILS(dpd_shares_message(shares, M, NULL, 0, &len), DPD_ERR_UNKNOWN_NODE, "node 2");
    CHECK_FAILS(dpd_shares_message(shares, 0, NULL, 0, NULL), DPD_ERR_NULL_POINTER, "out_len");
    dpd_shares_free(shares);
    dpd_client_free(client);
    dpd_round_config_free(config);
}

static void node_errors(dpd_rng *rng) {
    dpd_round_config *config = make_config(1, DPD_SHARE_MODE_SEED);
    dpd_round_config *other_round = make_config(2, DPD_SHARE_MODE_SEED);
    dpd_node *node = (dpd_node *)0x1;
    CHECK_FAILS(dpd_node_new(config, M, &node), DPD_ERR_UNKNOWN_NODE, "unknown node 2");
    CHECK_FAILS(dpd_node_new(config, 70000, &node), DPD_ERR_UNKNOWN_NODE, "unknown node 70000");
    CHECK(node == (dpd_node *)0x1);
    CHECK_OK(dpd_node_new(config, 0, &node));

    size_t len = 0;
    uint8_t *msg = share_bytes(config, rng, 0, 0, &len);
    uint8_t *for_node1 = NULL;
    size_t len1 = 0;
    for_node1 = share_bytes(config, rng, 1, 1, &len1);
    uint8_t *wrong_round = NULL;
    size_t len_wr = 0;
    wrong_round = share_bytes(other_round, rng, 2, 0, &len_wr);

    CHECK_FAILS(dpd_node_absorb(node, msg, len - 1), DPD_ERR_MALFORMED, "truncated");
    CHECK_FAILS(dpd_node_absorb(node, msg, 10), DPD_ERR_MALFORMED, "shorter than");
    CHECK_FAILS(dpd_node_absorb(node, NULL, len), DPD_ERR_NULL_POINTER, "`bytes`");
    CHECK_FAILS(dpd_node_absorb(NULL, msg, len), DPD_ERR_NULL_POINTER, "`node`");
    uint8_t *bad_magic = malloc(len);
    memcpy(bad_magic, msg, len);
    bad_magic[0] ^= 0xFF;
    CHECK_FAILS(dpd_node_absorb(node, bad_magic, len), DPD_ERR_MALFORMED, "magic");
    free(bad_magic);
    CHECK_FAILS(dpd_node_absorb(node, wrong_round, len_wr), DPD_ERR_WRONG_ROUND, "round");
    CHECK_FAILS(dpd_node_absorb(node, for_node1, len1), DPD_ERR_UNKNOWN_NODE, "node 1");

    /* None of the failures above changed the node. */
    size_t n_received = 99;
    CHECK_OK(dpd_node_received(node, NULL, NULL, 0, &n_received));
    CHECK(n_received == 0);

    CHECK_OK(dpd_node_absorb(node, msg, len));
    CHECK_FAILS(dpd_node_absorb(node, msg, len), DPD_ERR_DUPLICATE_CLIENT, "duplicate");
    uint64_t ids[N], shards[N];
    CHECK_FAILS(dpd_node_received(node, ids, NULL, N, &n_received), DPD_ERR_NULL_POINTER,
                "`out_shards`");
    CHECK_OK(dpd_node_received(node, ids, shards, N, &n_received));
    CHECK(n_received == 1 && ids[0] == 0);
    dpd_wire_header msg_header;
    CHECK_OK(dpd_wire_inspect(msg, len, &msg_header));
    CHECK(shards[0] == msg_header.shard);

    /* Only client 0 of N = 4 arrived: 3 missing > T = 1, nothing may be released. */
    dpd_node_sum *sum = (dpd_node_sum *)0x1;
    const uint64_t agreed[1] = {0};
    CHECK_FAILS(dpd_node_finalize(node, agreed, shards, 1, &sum), DPD_ERR_TOO_MANY_DROPPED,
                "refusing to release");
    const uint64_t twice[2] = {0, 0};
    const uint64_t twice_shards[2] = {shards[0], shards[0]};
    CHECK_FAILS(dpd_node_finalize(node, twice, twice_shards, 2, &sum), DPD_ERR_DUPLICATE_CLIENT,
                "");
    const uint64_t unknown[1] = {9};
    CHECK_FAILS(dpd_node_finalize(node, unknown, shards, 1, &sum), DPD_ERR_INVALID_ARGUMENT,
                "unknown client 9");
    const uint64_t other_attempt[1] = {shards[0] ^ 1};
    CHECK_FAILS(dpd_node_finalize(node, agreed, other_attempt, 1, &sum), DPD_ERR_INVALID_ARGUMENT,
                "sharded more than once");
    CHECK_FAILS(dpd_node_finalize(node, agreed, NULL, 1, &sum), DPD_ERR_NULL_POINTER,
                "`agreed_shards`");
    CHECK(sum == (dpd_node_sum *)0x1);
    CHECK_FAILS(dpd_node_retract(node, for_node1, len1), DPD_ERR_UNKNOWN_NODE, "");

    /* An aggregator with no node sums has nothing to release. */
    dpd_aggregator *aggregator = NULL;
    CHECK_OK(dpd_aggregator_new(config, &aggregator));
    double out[D] = {7.0, 7.0, 7.0};
    size_t out_len = 0;
    CHECK_FAILS(dpd_aggregator_release(aggregator, out, D, &out_len, NULL),
                DPD_ERR_INVALID_STATE, "0 of 2 node sums");
    CHECK(out[0] == 7.0);
    CHECK_FAILS(dpd_aggregator_add(aggregator, NULL), DPD_ERR_NULL_POINTER, "`sum`");
    dpd_aggregator_free(aggregator);

    dpd_wire_header header;
    CHECK_FAILS(dpd_wire_inspect(msg, len + 0, NULL), DPD_ERR_NULL_POINTER, "`out`");
    CHECK_FAILS(dpd_wire_inspect(msg, 3, &header), DPD_ERR_MALFORMED, "shorter than");

    free(msg);
    free(for_node1);
    free(wrong_round);
    dpd_node_free(node);
    dpd_round_config_free(other_round);
    dpd_round_config_free(config);
}

static void array_errors(void) {
    uint64_t a[4] = {1, 2, 3, 4};
    CHECK_FAILS(dpd_wrapping_add_u64(a, a + 1, 3), DPD_ERR_INVALID_ARGUMENT, "overlap");
    CHECK_FAILS(dpd_wrapping_add_u64(NULL, a, 3), DPD_ERR_NULL_POINTER, "`acc`");
    CHECK(a[0] == 1 && a[1] == 2);
    /* A misaligned double array is refused, not read. */
    double storage[3] = {0.0, 0.0, 0.0};
    const double *misaligned = (const double *)(const void *)((const char *)storage + 1);
    uint64_t enc[2];
    size_t n = 0;
    CHECK_FAILS(dpd_fixed_point_encode(10, 1.0, misaligned, 2, enc, 2, &n),
                DPD_ERR_INVALID_ARGUMENT, "aligned");
    const double bad[2] = {0.5, NAN};
    CHECK_FAILS(dpd_fixed_point_encode(10, 1.0, bad, 2, enc, 2, &n), DPD_ERR_NON_FINITE, "index 1");
    const double big[2] = {0.5, 2.0};
    CHECK_FAILS(dpd_fixed_point_encode(10, 1.0, big, 2, enc, 2, &n), DPD_ERR_OVERFLOW, "bound");
    CHECK_FAILS(dpd_fixed_point_decode(63, enc, 2, NULL, 0, &n), DPD_ERR_INVALID_ARGUMENT,
                "frac");
}

int main(void) {
    threads(); /* must come first: the thread pool can only be sized before it is used */
    last_error_api();
    dpd_rng *rng = NULL;
    CHECK_FAILS(dpd_rng_new_os(NULL), DPD_ERR_NULL_POINTER, "`out`");
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(1, &rng));
    config_errors();
    client_errors(rng);
    node_errors(rng);
    array_errors();
    /* Freeing NULL is a no-op for every handle type. */
    dpd_rng_free(NULL);
    dpd_round_config_free(NULL);
    dpd_client_free(NULL);
    dpd_shares_free(NULL);
    dpd_node_free(NULL);
    dpd_node_sum_free(NULL);
    dpd_aggregator_free(NULL);
    dpd_accountant_free(NULL);
    dpd_rng_free(rng);
    return check_exit("test_errors");
}

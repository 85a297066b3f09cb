/* Huge sizes across the C ABI (issue 14, item 1): configs, nodes, aggregators, clients and BLR/PLR
 * inputs at d = 2^32, d = 2^40 and n·d past SIZE_MAX each get their documented status, and the
 * process is never aborted.
 *
 * Which status a 32 GiB allocation gets depends on the machine's memory, so the allocation checks
 * run under an address-space limit (RLIMIT_AS = what the process already maps + 1 GiB): there,
 * the allocator refuses deterministically and dpdist must report DPD_ERR_ALLOC. Before this
 * change those calls aborted the whole process (signal 6). The limit is restored afterwards. */
#define _DEFAULT_SOURCE /* getrlimit/setrlimit under -std=c11 */
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "check.h"

#define D32 ((size_t)1 << 32)
#define D40 ((size_t)1 << 40)

/* The process's virtual size in bytes (first field of /proc/self/statm, in pages), or 0. */
static unsigned long long mapped_bytes(void) {
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL) return 0;
    if (fscanf(f, "%llu", &pages) != 1) pages = 0;
    fclose(f);
    return pages * 4096ULL;
}

static dpd_round_config *config(size_t n, size_t d) {
    dpd_round_config *cfg = NULL;
    CHECK_OK(dpd_round_config_new_exact(1, n, 2, 0, d, 1.0, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &cfg));
    return cfg;
}

/* Calls whose buffers are sized by d or N: under the address-space limit they must fail cleanly
 * with DPD_ERR_ALLOC and leave the out-pointer alone. */
static void allocation_failures_are_statuses(void) {
    struct rlimit saved;
    CHECK(getrlimit(RLIMIT_AS, &saved) == 0);
    unsigned long long now = mapped_bytes();
    CHECK(now > 0);
    struct rlimit tight = saved;
    tight.rlim_cur = (rlim_t)(now + (1ULL << 30));
    if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < tight.rlim_cur) tight.rlim_cur = saved.rlim_cur;

    dpd_round_config *wide = config(4, D32);        /* d = 2^32: 32 GiB per accumulator */
    dpd_round_config *crowded = config(D32, D32);   /* N·d = 2^64: past SIZE_MAX */
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(7, &rng));

    CHECK(setrlimit(RLIMIT_AS, &tight) == 0);
    dpd_node *node = (dpd_node *)&saved; /* sentinel: must stay untouched */
    CHECK_FAILS(dpd_node_new(wide, 0, &node), DPD_ERR_ALLOC, "node accumulator");
    CHECK(node == (dpd_node *)&saved);
    CHECK_FAILS(dpd_node_new(wide, 1, &node), DPD_ERR_ALLOC, "cannot allocate");
    CHECK_FAILS(dpd_node_new(crowded, 0, &node), DPD_ERR_ALLOC, "cannot allocate");
    dpd_aggregator *agg = (dpd_aggregator *)&saved;
    CHECK_FAILS(dpd_aggregator_new(wide, &agg), DPD_ERR_ALLOC, "aggregator accumulator");
    CHECK(agg == (dpd_aggregator *)&saved);
    CHECK_FAILS(dpd_aggregator_new(crowded, &agg), DPD_ERR_ALLOC, "cannot allocate");
    /* A client allocates nothing of size d until it shards, and sharding needs the caller's d
     * values: creating one is fine, sharding without them is a NULL-pointer error. */
    dpd_client *client = NULL;
    CHECK_OK(dpd_client_new(wide, 3, rng, &client));
    dpd_shares *shares = NULL;
    CHECK_FAILS(dpd_client_shard(client, NULL, D32, &shares), DPD_ERR_NULL_POINTER, "values");
    CHECK(shares == NULL);
    dpd_client_free(client);
    CHECK(setrlimit(RLIMIT_AS, &saved) == 0);

    /* The same handles work again once memory is available at a sane size. */
    dpd_round_config *small = config(4, 3);
    CHECK_OK(dpd_node_new(small, 0, &node));
    CHECK_OK(dpd_aggregator_new(small, &agg));
    dpd_node_free(node);
    dpd_aggregator_free(agg);
    dpd_round_config_free(small);
    dpd_round_config_free(wide);
    dpd_round_config_free(crowded);
    dpd_rng_free(rng);
}

/* Sizes refused by their documented maxima, before anything is allocated. */
static void documented_maxima(void) {
    dpd_round_config *cfg = (dpd_round_config *)&cfg;
    CHECK_FAILS(dpd_round_config_new_exact(1, 4, 2, 0, D40, 1.0, DPD_SHARE_MODE_SEED,
                                           DPD_FRAC_BITS_AUTO, &cfg),
                DPD_ERR_INVALID_ARGUMENT, "dim");
    CHECK_FAILS(dpd_round_config_new_exact(1, D40, 2, 0, 4, 1.0, DPD_SHARE_MODE_SEED,
                                           DPD_FRAC_BITS_AUTO, &cfg),
                DPD_ERR_INVALID_ARGUMENT, "n_clients");
    CHECK_FAILS(dpd_round_config_new_exact(1, 4, 2, 0, SIZE_MAX, 1.0, DPD_SHARE_MODE_SEED,
                                           DPD_FRAC_BITS_AUTO, &cfg),
                DPD_ERR_INVALID_ARGUMENT, "dim");
    CHECK(cfg == (dpd_round_config *)&cfg);

    /* N·d past SIZE_MAX in a whole simulated round: a length mismatch, never a wrapped product. */
    dpd_round_config *crowded = config(D32, D32);
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(7, &rng));
    double inputs[4] = {0};
    size_t len = 99;
    CHECK_FAILS(dpd_simulate_round(crowded, inputs, 4, NULL, 0, rng, NULL, 0, &len, NULL),
                DPD_ERR_LENGTH_MISMATCH, "N·d");
    CHECK(len == 99);
    dpd_round_config_free(crowded);

    /* BLR: the statistics length d(d+1)/2 + d must fit, as a count of doubles. */
    size_t stats_len = 7;
    CHECK_OK(dpd_blr_stats_len(3, 1, &stats_len));
    CHECK(stats_len == 10);
    CHECK_FAILS(dpd_blr_stats_len(D32, 0, &stats_len), DPD_ERR_OVERFLOW, "overflows");
    CHECK_FAILS(dpd_blr_stats_len(D40, 1, &stats_len), DPD_ERR_OVERFLOW, "overflows");
    CHECK_FAILS(dpd_blr_stats_len(SIZE_MAX, 1, &stats_len), DPD_ERR_OVERFLOW, "overflows");
    CHECK(stats_len == 10);
    double mean[4];
    size_t mean_len = 0;
    CHECK_FAILS(dpd_blr_posterior_mean(NULL, 0, 10, SIZE_MAX, 0, 1.0, 1.0, mean, 4, &mean_len),
                DPD_ERR_OVERFLOW, "overflows");
    CHECK_FAILS(dpd_blr_posterior_mean(NULL, 0, 10, D32, 1, 1.0, 1.0, mean, 4, &mean_len),
                DPD_ERR_OVERFLOW, "overflows");
    double row[2] = {0.5, 0.5};
    CHECK_FAILS(dpd_blr_record_stats(NULL, D32, 1.0, 0, NULL, 0, &mean_len),
                DPD_ERR_NULL_POINTER, "x_row");
    /* n·d past SIZE_MAX: n = 2, d = 2^63. */
    double y[2] = {1.0, 2.0};
    CHECK_FAILS(dpd_blr_fit_non_private(row, 2, y, 2, ((size_t)1 << 63), 1.0, 1.0, mean, 4,
                                        &mean_len),
                DPD_ERR_LENGTH_MISMATCH, "n·d");
    dpd_blr_config *blr = (dpd_blr_config *)&blr;
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, NULL, D32, 1.0, &blr), DPD_ERR_NULL_POINTER,
                "assumed_x");
    CHECK(blr == (dpd_blr_config *)&blr);
    dpd_blr_model *model = NULL;
    CHECK_FAILS(dpd_blr_fit(row, 2, y, 2, ((size_t)1 << 63), NULL, rng, &model),
                DPD_ERR_NULL_POINTER, "config");

    /* PLR: rows × features past SIZE_MAX. */
    double labels[2] = {0.0, 1.0};
    dpd_dataset *data = (dpd_dataset *)&data;
    CHECK_FAILS(dpd_dataset_new(row, 2, ((size_t)1 << 63), labels, 2, &data),
                DPD_ERR_LENGTH_MISMATCH, "n_rows·n_features");
    CHECK_FAILS(dpd_dataset_new(row, 2, D32, labels, 2, &data), DPD_ERR_LENGTH_MISMATCH, "");
    CHECK(data == (dpd_dataset *)&data);
    dpd_plr_model *plr = NULL;
    CHECK_FAILS(dpd_plr_model_from_weights(NULL, D32, 1.0, &plr), DPD_ERR_NULL_POINTER,
                "weights");
    CHECK(plr == NULL);
    dpd_rng_free(rng);
}

int main(void) {
    documented_maxima();
    allocation_failures_are_statuses();
    return check_exit("test_limits");
}

/* Sealing a real share message from C for upload with the host's own HTTP client: seal to a
 * node's public key, open with its secret key, and check that the sealed bytes open nowhere
 * else (other round, config, client, node or key) and that bad input changes nothing. The node
 * key pair is RFC 9180 A.2.1's recipient key. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static void hex_to(const char *hex, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

int main(void) {
    uint8_t pk[32], sk[32];
    hex_to("4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a", pk, 32);
    hex_to("8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb", sk, 32);

    /* A real share message: client 1 of a 3-node round, the message for node 2 (seed mode). */
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new_exact(11, 4, 3, 1, 3, 5.0, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &config));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(3, &rng));
    dpd_client *client = NULL;
    dpd_shares *shares = NULL;
    const double x[3] = {1.5, -2.25, 0.125};
    CHECK_OK(dpd_client_new(config, 1, rng, &client));
    CHECK_OK(dpd_client_shard(client, x, 3, &shares));
    size_t msg_len = 0;
    CHECK(dpd_shares_message(shares, 2, NULL, 0, &msg_len) == DPD_ERR_BUFFER_TOO_SMALL);
    uint8_t *msg = malloc(msg_len);
    CHECK_OK(dpd_shares_message(shares, 2, msg, msg_len, &msg_len));

    dpd_seal_context ctx = {.round = 11, .client = 1, .node = 2};
    for (int i = 0; i < 32; i++) ctx.config_hash[i] = (uint8_t)(i * 7);

    size_t sealed_len = 0;
    CHECK(dpd_share_seal(pk, 32, &ctx, msg, msg_len, NULL, 0, &sealed_len) ==
          DPD_ERR_BUFFER_TOO_SMALL);
    CHECK(sealed_len == msg_len + 48);
    uint8_t *sealed = malloc(sealed_len);
    CHECK_OK(dpd_share_seal(pk, 32, &ctx, msg, msg_len, sealed, sealed_len, &sealed_len));

    uint8_t *opened = malloc(msg_len);
    size_t opened_len = 0;
    CHECK_OK(dpd_share_open(sk, 32, &ctx, sealed, sealed_len, opened, msg_len, &opened_len));
    CHECK(opened_len == msg_len && memcmp(opened, msg, msg_len) == 0);
    dpd_wire_header header;
    CHECK_OK(dpd_wire_inspect(opened, opened_len, &header));
    CHECK(header.round == 11 && header.client == 1 && header.node == 2);

    /* Every field of the slot is bound: each change makes opening fail and writes nothing. */
    dpd_seal_context others[4] = {ctx, ctx, ctx, ctx};
    others[0].round = 12;
    others[1].config_hash[31] ^= 1;
    others[2].client = 2;
    others[3].node = 1;
    for (int i = 0; i < 4; i++) {
        size_t n = 12345;
        CHECK(dpd_share_open(sk, 32, &others[i], sealed, sealed_len, opened, msg_len, &n) ==
              DPD_ERR_MALFORMED);
        CHECK(n == 12345);
    }
    /* Tampered, truncated, wrong key. */
    sealed[40] ^= 1;
    CHECK(dpd_share_open(sk, 32, &ctx, sealed, sealed_len, opened, msg_len, &opened_len) ==
          DPD_ERR_MALFORMED);
    sealed[40] ^= 1;
    CHECK(dpd_share_open(sk, 32, &ctx, sealed, 47, opened, msg_len, &opened_len) ==
          DPD_ERR_MALFORMED);
    uint8_t other_sk[32];
    memcpy(other_sk, sk, 32);
    other_sk[0] ^= 0x40;
    CHECK(dpd_share_open(other_sk, 32, &ctx, sealed, sealed_len, opened, msg_len, &opened_len) ==
          DPD_ERR_MALFORMED);
    /* Bad arguments. */
    size_t n = 999;
    CHECK(dpd_share_seal(pk, 16, &ctx, msg, msg_len, sealed, sealed_len, &n) ==
          DPD_ERR_INVALID_ARGUMENT);
    CHECK(dpd_share_seal(NULL, 32, &ctx, msg, msg_len, sealed, sealed_len, &n) ==
          DPD_ERR_NULL_POINTER);
    CHECK(dpd_share_seal(pk, 32, NULL, msg, msg_len, sealed, sealed_len, &n) ==
          DPD_ERR_NULL_POINTER);
    CHECK(dpd_share_seal(pk, 32, &ctx, msg, msg_len, sealed, sealed_len, NULL) ==
          DPD_ERR_NULL_POINTER);
    dpd_seal_context far = ctx;
    far.node = 70000;
    CHECK(dpd_share_seal(pk, 32, &far, msg, msg_len, sealed, sealed_len, &n) ==
          DPD_ERR_INVALID_ARGUMENT);
    CHECK(n == 999);
    /* Still intact after all that. */
    CHECK_OK(dpd_share_open(sk, 32, &ctx, sealed, sealed_len, opened, msg_len, &opened_len));

    free(opened);
    free(sealed);
    free(msg);
    dpd_shares_free(shares);
    dpd_client_free(client);
    dpd_rng_free(rng);
    dpd_round_config_free(config);
    return check_exit("test_seal");
}

/* DCA, the secure summation round: configuration, clients, compute nodes, aggregator, and the
 * in-process simulation of a whole round. */
#include <stdio.h>
#include <string.h>

#include "dpdist_r.h"

static dpd_round_config *config_of(SEXP x) {
  return (dpd_round_config *)dpdr_handle(x, DPDR_ROUND_CONFIG, "config");
}

static SEXP named_list(int n, const char **names, SEXP *values) {
  SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) {
    SET_VECTOR_ELT(out, i, values[i]);
    SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

SEXP dpdr_round_config_new(SEXP round, SEXP n_clients, SEXP n_nodes, SEXP max_dropped, SEXP dim,
                           SEXP bound, SEXP mode, SEXP sigma_total, SEXP frac_bits) {
  uint64_t r = dpdr_u64(round, "round");
  size_t n = dpdr_size(n_clients, "n_clients");
  uint32_t m = dpdr_u32(n_nodes, "n_nodes");
  size_t t = dpdr_size(max_dropped, "max_dropped");
  size_t d = dpdr_size(dim, "dim");
  double b = dpdr_double(bound, "bound");
  uint32_t md = dpdr_u32(mode, "mode");
  uint32_t f = frac_bits == R_NilValue ? DPD_FRAC_BITS_AUTO : dpdr_u32(frac_bits, "frac_bits");
  dpd_round_config *cfg = NULL;
  /* NULL sigma: dca_config_exact, the explicitly NON-PRIVATE round. */
  if (sigma_total == R_NilValue) {
    dpdr_check(dpd_round_config_new_exact(r, n, m, t, d, b, md, f, &cfg));
  } else {
    double s = dpdr_double(sigma_total, "noise_sigma_total");
    dpdr_check(dpd_round_config_new(r, n, m, t, d, b, md, s, f, &cfg));
  }
  return dpdr_wrap(cfg, DPDR_ROUND_CONFIG);
}

SEXP dpdr_round_config_info(SEXP config) {
  uint32_t frac_bits = 0;
  double sigma_client = 0;
  size_t dim = 0;
  dpdr_check(dpd_round_config_info(config_of(config), &frac_bits, &sigma_client, &dim));
  const char *names[] = {"frac_bits", "sigma_client", "dim"};
  SEXP values[3];
  values[0] = PROTECT(Rf_ScalarInteger((int)frac_bits));
  values[1] = PROTECT(Rf_ScalarReal(sigma_client));
  values[2] = PROTECT(Rf_ScalarReal((double)dim));
  SEXP out = named_list(3, names, values);
  UNPROTECT(3);
  return out;
}

/* ---- client ---------------------------------------------------------------------------------- */

SEXP dpdr_client_new(SEXP config, SEXP client_id, SEXP rng) {
  dpd_round_config *cfg = config_of(config);
  uint64_t id = dpdr_u64(client_id, "client_id");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_client *client = NULL;
  dpdr_check(dpd_client_new(cfg, id, r, &client));
  return dpdr_wrap(client, DPDR_CLIENT);
}

typedef struct {
  const dpd_shares *shares;
  uint32_t node;
} message_ctx;

static dpd_status fill_message(void *ctx, void *out, size_t cap, size_t *len) {
  const message_ctx *m = (const message_ctx *)ctx;
  return dpd_shares_message(m->shares, m->node, (uint8_t *)out, cap, len);
}

/* Returns one raw vector of wire bytes per compute node (element k + 1 is for node k). The
 * shares handle is wrapped at once, so a failure below leaves it to the garbage collector. */
SEXP dpdr_client_shard(SEXP client, SEXP values) {
  dpd_client *c = (dpd_client *)dpdr_handle(client, DPDR_CLIENT, "client");
  const double *v = dpdr_doubles(values, "values");
  dpd_shares *raw_shares = NULL;
  dpdr_check(dpd_client_shard(c, v, (size_t)XLENGTH(values), &raw_shares));
  SEXP handle = PROTECT(dpdr_wrap(raw_shares, DPDR_SHARES));

  size_t count = 0;
  dpdr_check(dpd_shares_count(raw_shares, &count));
  SEXP out = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)count));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)count));
  for (size_t k = 0; k < count; k++) {
    message_ctx ctx = {raw_shares, (uint32_t)k};
    SET_VECTOR_ELT(out, (R_xlen_t)k, dpdr_fetch(DPDR_BYTES, fill_message, &ctx, 0));
    char name[32];
    snprintf(name, sizeof name, "node%zu", k);
    SET_STRING_ELT(names, (R_xlen_t)k, Rf_mkChar(name));
  }
  Rf_setAttrib(out, R_NamesSymbol, names);
  dpdr_dispose(handle); /* the messages are copied: free the masks now, not at some later GC */
  UNPROTECT(3);
  return out;
}

/* ---- compute node ---------------------------------------------------------------------------- */

static dpd_node *node_of(SEXP x) { return (dpd_node *)dpdr_handle(x, DPDR_NODE, "node"); }

/* ---- round ledger ----------------------------------------------------------------------------- */

/* NULL for R's NULL: the node or aggregator is then created without a ledger. */
static dpd_round_ledger *ledger_or_null(SEXP x) {
  return Rf_isNull(x) ? NULL : (dpd_round_ledger *)dpdr_handle(x, DPDR_ROUND_LEDGER, "ledger");
}

SEXP dpdr_round_ledger_new(void) {
  dpd_round_ledger *out = NULL;
  dpdr_check(dpd_round_ledger_new(&out));
  return dpdr_wrap(out, DPDR_ROUND_LEDGER);
}

SEXP dpdr_round_ledger_admit(SEXP ledger, SEXP config) {
  uint32_t is_new = 0;
  dpdr_check(dpd_round_ledger_admit(ledger_or_null(ledger), config_of(config), &is_new));
  return Rf_ScalarLogical(is_new != 0);
}

/* The admitted rounds, for storage: list(round = ids as doubles, in increasing order,
 * digest = one raw vector of 16 bytes per round). */
SEXP dpdr_round_ledger_entries(SEXP ledger) {
  dpd_round_ledger *l = ledger_or_null(ledger);
  size_t len = 0;
  dpd_status status = dpd_round_ledger_entries(l, NULL, NULL, 0, &len);
  if (status != DPD_ERR_BUFFER_TOO_SMALL) dpdr_check(status);
  uint64_t *rounds = (uint64_t *)R_alloc(len > 0 ? len : 1, sizeof(uint64_t));
  uint8_t *digests = (uint8_t *)R_alloc(len > 0 ? len : 1, DPD_CONFIG_DIGEST_LEN);
  dpdr_check(dpd_round_ledger_entries(l, rounds, digests, len, &len));
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SET_VECTOR_ELT(out, 0, dpdr_u64s_to_r(rounds, len));
  SEXP list = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)len));
  for (size_t i = 0; i < len; i++) {
    SEXP digest = Rf_allocVector(RAWSXP, DPD_CONFIG_DIGEST_LEN);
    SET_VECTOR_ELT(list, (R_xlen_t)i, digest);
    memcpy(RAW(digest), digests + i * DPD_CONFIG_DIGEST_LEN, DPD_CONFIG_DIGEST_LEN);
  }
  SET_VECTOR_ELT(out, 1, list);
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
  SET_STRING_ELT(names, 0, Rf_mkChar("round"));
  SET_STRING_ELT(names, 1, Rf_mkChar("digest"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(3);
  return out;
}

SEXP dpdr_round_ledger_admit_digest(SEXP ledger, SEXP round, SEXP digest) {
  const uint8_t *bytes = dpdr_raw(digest, "digest");
  uint32_t is_new = 0;
  dpdr_check(dpd_round_ledger_admit_digest(ledger_or_null(ledger), dpdr_u64(round, "round"),
                                           bytes, (size_t)XLENGTH(digest), &is_new));
  return Rf_ScalarLogical(is_new != 0);
}

SEXP dpdr_node_new(SEXP config, SEXP node, SEXP ledger) {
  dpd_round_config *cfg = config_of(config);
  uint32_t k = dpdr_u32(node, "node");
  dpd_round_ledger *l = ledger_or_null(ledger);
  dpd_node *out = NULL;
  dpdr_check(l ? dpd_node_new_admitted(l, cfg, k, &out) : dpd_node_new(cfg, k, &out));
  return dpdr_wrap(out, DPDR_NODE);
}

SEXP dpdr_node_absorb(SEXP node, SEXP bytes) {
  dpd_node *n = node_of(node);
  const uint8_t *b = dpdr_raw(bytes, "bytes");
  dpdr_check(dpd_node_absorb(n, b, (size_t)XLENGTH(bytes)));
  return R_NilValue;
}

SEXP dpdr_node_retract(SEXP node, SEXP bytes) {
  dpd_node *n = node_of(node);
  const uint8_t *b = dpdr_raw(bytes, "bytes");
  dpdr_check(dpd_node_retract(n, b, (size_t)XLENGTH(bytes)));
  return R_NilValue;
}

/* Shard ids are random 64-bit values, which an R double cannot hold exactly: they travel as
 * 16 hex digits. */
static SEXP shard_ids_to_r(const uint64_t *v, size_t n) {
  SEXP out = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n));
  char buf[17];
  for (size_t i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v[i]);
    SET_STRING_ELT(out, (R_xlen_t)i, Rf_mkChar(buf));
  }
  UNPROTECT(1);
  return out;
}

static uint64_t *shard_ids_from_r(SEXP x, const char *name) {
  if (TYPEOF(x) != STRSXP)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a character vector of shard ids", name);
  R_xlen_t n = XLENGTH(x);
  uint64_t *out = (uint64_t *)R_alloc(n > 0 ? (size_t)n : 1, sizeof(uint64_t));
  for (R_xlen_t i = 0; i < n; i++) {
    SEXP el = STRING_ELT(x, i);
    const char *hex = el == NA_STRING ? "" : CHAR(el);
    uint64_t v = 0;
    size_t len = strlen(hex);
    int ok = len == 16;
    for (size_t j = 0; ok && j < len; j++) {
      char c = hex[j];
      int digit = c >= '0' && c <= '9' ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0) ok = 0;
      v = (v << 4) | (uint64_t)(digit < 0 ? 0 : digit);
    }
    if (!ok)
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s`[%lld] must be 16 hex digits", name,
                (long long)i + 1);
    out[i] = v;
  }
  return out;
}

SEXP dpdr_node_received(SEXP node) {
  dpd_node *n = node_of(node);
  size_t len = 0;
  dpd_status st = dpd_node_received(n, NULL, NULL, 0, &len);
  if (st != DPD_ERR_BUFFER_TOO_SMALL) dpdr_check(st);
  uint64_t *ids = (uint64_t *)R_alloc(len > 0 ? len : 1, sizeof(uint64_t));
  uint64_t *shards = (uint64_t *)R_alloc(len > 0 ? len : 1, sizeof(uint64_t));
  if (len > 0) dpdr_check(dpd_node_received(n, ids, shards, len, &len));
  const char *names[] = {"client", "shard"};
  SEXP values[2];
  values[0] = PROTECT(dpdr_u64s_to_r(ids, len));
  values[1] = PROTECT(shard_ids_to_r(shards, len));
  SEXP out = named_list(2, names, values);
  UNPROTECT(2);
  return out;
}

SEXP dpdr_node_finalize(SEXP node, SEXP clients, SEXP shards) {
  dpd_node *n = node_of(node);
  uint64_t *ids = dpdr_u64s_from_r(clients, "agreed$client");
  uint64_t *shard_ids = shard_ids_from_r(shards, "agreed$shard");
  if (XLENGTH(clients) != XLENGTH(shards))
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`agreed` has %lld clients but %lld shard ids",
              (long long)XLENGTH(clients), (long long)XLENGTH(shards));
  dpd_node_sum *sum = NULL;
  dpdr_check(dpd_node_finalize(n, ids, shard_ids, (size_t)XLENGTH(clients), &sum));
  return dpdr_wrap(sum, DPDR_NODE_SUM);
}

/* ---- aggregator ------------------------------------------------------------------------------ */

static dpd_aggregator *aggregator_of(SEXP x) {
  return (dpd_aggregator *)dpdr_handle(x, DPDR_AGGREGATOR, "aggregator");
}

SEXP dpdr_aggregator_new(SEXP config, SEXP ledger) {
  dpd_round_config *cfg = config_of(config);
  dpd_round_ledger *l = ledger_or_null(ledger);
  dpd_aggregator *out = NULL;
  dpdr_check(l ? dpd_aggregator_new_admitted(l, cfg, &out) : dpd_aggregator_new(cfg, &out));
  SEXP ptr = dpdr_wrap(out, DPDR_AGGREGATOR);
  R_SetExternalPtrProtected(ptr, config); /* release needs the round's dimension */
  return ptr;
}

SEXP dpdr_aggregator_add(SEXP aggregator, SEXP node_sum) {
  dpd_aggregator *a = aggregator_of(aggregator);
  dpd_node_sum *s = (dpd_node_sum *)dpdr_handle(node_sum, DPDR_NODE_SUM, "node_sum");
  dpdr_check(dpd_aggregator_add(a, s));
  return R_NilValue;
}

static SEXP release_list(SEXP sum, const dpd_release_info *info) {
  const char *names[] = {"sum",        "n_clients",         "n_included",
                         "max_dropped", "frac_bits",         "noise_sigma_total",
                         "noise_sigma_client", "noise_sigma_released"};
  SEXP values[8];
  values[0] = sum;
  values[1] = PROTECT(Rf_ScalarReal((double)info->n_clients));
  values[2] = PROTECT(Rf_ScalarReal((double)info->n_included));
  values[3] = PROTECT(Rf_ScalarReal((double)info->max_dropped));
  values[4] = PROTECT(Rf_ScalarInteger((int)info->frac_bits));
  values[5] = PROTECT(Rf_ScalarReal(info->noise_sigma_total));
  values[6] = PROTECT(Rf_ScalarReal(info->noise_sigma_client));
  values[7] = PROTECT(Rf_ScalarReal(info->noise_sigma_released));
  SEXP out = named_list(8, names, values);
  UNPROTECT(7);
  return out;
}

static size_t config_dim(SEXP config) {
  size_t dim = 0;
  dpdr_check(dpd_round_config_info(config_of(config), NULL, NULL, &dim));
  return dim;
}

SEXP dpdr_aggregator_release(SEXP aggregator) {
  dpd_aggregator *a = aggregator_of(aggregator);
  size_t dim = config_dim(R_ExternalPtrProtected(aggregator));
  SEXP sum = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)dim));
  size_t len = 0;
  dpd_release_info info;
  dpdr_check(dpd_aggregator_release(a, REAL(sum), dim, &len, &info));
  SEXP out = release_list(sum, &info);
  UNPROTECT(1);
  return out;
}

/* inputs: an N x d R matrix; the C ABI wants it row-major. */
SEXP dpdr_simulate_round(SEXP config, SEXP inputs, SEXP dropped, SEXP rng) {
  dpd_round_config *cfg = config_of(config);
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(inputs, "inputs", &n, &d);
  uint64_t *drop = dpdr_u64s_from_r(dropped, "dropped");
  size_t dim = config_dim(config);
  SEXP sum = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)dim));
  size_t len = 0;
  dpd_release_info info;
  dpdr_check(dpd_simulate_round(cfg, rows, n * d, drop,
                                (size_t)XLENGTH(dropped), r, REAL(sum), dim, &len, &info));
  SEXP out = release_list(sum, &info);
  UNPROTECT(1);
  return out;
}

SEXP dpdr_wire_inspect(SEXP bytes) {
  const uint8_t *b = dpdr_raw(bytes, "bytes");
  dpd_wire_header h;
  dpdr_check(dpd_wire_inspect(b, (size_t)XLENGTH(bytes), &h));
  const char *names[] = {"round", "client", "dim", "node", "frac_bits", "mode", "shard"};
  SEXP values[7];
  uint64_t ids[3] = {h.round, h.client, h.dim};
  values[0] = PROTECT(dpdr_u64s_to_r(&ids[0], 1));
  values[1] = PROTECT(dpdr_u64s_to_r(&ids[1], 1));
  values[2] = PROTECT(dpdr_u64s_to_r(&ids[2], 1));
  values[3] = PROTECT(Rf_ScalarInteger((int)h.node));
  values[4] = PROTECT(Rf_ScalarInteger((int)h.frac_bits));
  values[5] = PROTECT(Rf_mkString(h.kind == DPD_SHARE_MODE_SEED ? "seed" : "full"));
  values[6] = PROTECT(shard_ids_to_r(&h.shard, 1));
  SEXP out = named_list(7, names, values);
  UNPROTECT(7);
  return out;
}

/* ---- node sums on the wire (compute node -> aggregator) ------------------------------------- */

static dpd_status fill_node_sum_bytes(void *sum, void *out, size_t cap, size_t *len) {
  return dpd_node_sum_to_bytes((const dpd_node_sum *)sum, (uint8_t *)out, cap, len);
}

SEXP dpdr_node_sum_to_bytes(SEXP node_sum) {
  dpd_node_sum *s = (dpd_node_sum *)dpdr_handle(node_sum, DPDR_NODE_SUM, "node_sum");
  return dpdr_fetch(DPDR_BYTES, fill_node_sum_bytes, s, 0);
}

SEXP dpdr_node_sum_from_bytes(SEXP config, SEXP bytes) {
  dpd_round_config *cfg = config_of(config);
  const uint8_t *b = dpdr_raw(bytes, "bytes");
  dpd_node_sum *s = NULL;
  dpdr_check(dpd_node_sum_from_bytes(cfg, b, (size_t)XLENGTH(bytes), &s));
  return dpdr_wrap(s, DPDR_NODE_SUM);
}

/* ---- verified rounds (issue 43) ------------------------------------------------------------- */

/* kind: 0 = none, 1 = L-infinity; the config handle is changed in place. */
SEXP dpdr_round_config_set_validity(SEXP config, SEXP kind, SEXP truncation_delta) {
  dpd_round_config *cfg = config_of(config);
  uint32_t k = dpdr_u32(kind, "kind");
  double td = dpdr_double(truncation_delta, "truncation_delta");
  dpdr_check(dpd_round_config_set_validity(cfg, k, td));
  return R_NilValue;
}

/* L2: the data's norm bound (value units); the config handle is changed in place. */
SEXP dpdr_round_config_set_validity_l2(SEXP config, SEXP data_norm, SEXP truncation_delta) {
  dpd_round_config *cfg = config_of(config);
  double norm = dpdr_double(data_norm, "data_norm");
  double td = dpdr_double(truncation_delta, "truncation_delta");
  dpdr_check(dpd_round_config_set_validity_l2(cfg, norm, td));
  return R_NilValue;
}

/* Grid units as doubles: exact below 2^53 (rounds of up to ~50 fractional bits). */
SEXP dpdr_round_config_validity_info(SEXP config) {
  dpd_validity_info v;
  dpdr_check(dpd_round_config_validity_info(config_of(config), &v));
  const char *names[] = {"kind",       "truncation_delta_target", "data_units",
                         "slice_units", "bound_units",             "truncation_delta"};
  SEXP values[6];
  values[0] = PROTECT(Rf_mkString(v.kind == DPD_VALIDITY_LINF ? "linf"
                                   : v.kind == DPD_VALIDITY_L2 ? "l2"
                                                               : "none"));
  values[1] = PROTECT(Rf_ScalarReal(v.truncation_delta_target));
  values[2] = PROTECT(Rf_ScalarReal((double)v.data_units));
  values[3] = PROTECT(Rf_ScalarReal((double)v.slice_units));
  values[4] = PROTECT(Rf_ScalarReal((double)v.bound_units));
  values[5] = PROTECT(Rf_ScalarReal(v.truncation_delta));
  SEXP out = named_list(6, names, values);
  UNPROTECT(6);
  return out;
}

SEXP dpdr_verified_total_delta(SEXP epsilon, SEXP delta, SEXP truncation_delta) {
  double out = 0.0;
  dpdr_check(dpd_verified_total_delta(dpdr_double(epsilon, "epsilon"),
                                      dpdr_double(delta, "delta"),
                                      dpdr_double(truncation_delta, "truncation_delta"), &out));
  return Rf_ScalarReal(out);
}

/* The release list plus `invalid` (0-based ids of the clients left out) and `truncation_delta`.
 * A non-empty `testing_malicious` calls the TESTING-only variant. */
SEXP dpdr_simulate_round_verified(SEXP config, SEXP inputs, SEXP dropped, SEXP testing_malicious,
                                  SEXP rng) {
  dpd_round_config *cfg = config_of(config);
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(inputs, "inputs", &n, &d);
  uint64_t *drop = dpdr_u64s_from_r(dropped, "dropped");
  uint64_t *cheats = dpdr_u64s_from_r(testing_malicious, "testing_malicious");
  size_t n_cheats = (size_t)XLENGTH(testing_malicious);
  size_t dim = config_dim(config);
  /* At most T < N clients are left out of a round that releases. */
  size_t cap = n + 1;
  uint64_t *invalid = (uint64_t *)R_alloc(cap, sizeof(uint64_t));
  SEXP sum = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)dim));
  size_t len = 0, n_invalid = 0;
  double dt = 0.0;
  dpd_release_info info;
  if (n_cheats == 0) {
    dpdr_check(dpd_simulate_round_verified(cfg, rows, n * d, drop, (size_t)XLENGTH(dropped), r,
                                           REAL(sum), dim, &len, invalid, cap, &n_invalid, &info,
                                           &dt));
  } else {
    dpdr_check(dpd_simulate_round_verified_testing_malicious(
        cfg, rows, n * d, drop, (size_t)XLENGTH(dropped), cheats, n_cheats, r, REAL(sum), dim,
        &len, invalid, cap, &n_invalid, &info, &dt));
  }
  SEXP release = PROTECT(release_list(sum, &info));
  SEXP ids = PROTECT(dpdr_u64s_to_r(invalid, n_invalid));
  SEXP delta_t = PROTECT(Rf_ScalarReal(dt));
  R_xlen_t k = XLENGTH(release);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, k + 2));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k + 2));
  SEXP old = Rf_getAttrib(release, R_NamesSymbol);
  for (R_xlen_t i = 0; i < k; i++) {
    SET_VECTOR_ELT(out, i, VECTOR_ELT(release, i));
    SET_STRING_ELT(nm, i, STRING_ELT(old, i));
  }
  SET_VECTOR_ELT(out, k, ids);
  SET_STRING_ELT(nm, k, Rf_mkChar("invalid"));
  SET_VECTOR_ELT(out, k + 1, delta_t);
  SET_STRING_ELT(nm, k + 1, Rf_mkChar("truncation_delta"));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(6);
  return out;
}

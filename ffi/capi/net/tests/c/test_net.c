/* The C ABI of libdpdist_net without a network: every argument a host can get wrong gets its
 * status and a message naming the cause, and changes nothing. Usage: test_net CA_PEM SCRATCH_DIR
 * (a CA certificate, e.g. from scripts/make-dev-certs.sh, and an empty writable directory). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpdist_net.h"

static int failures = 0;

static const char *last(void) {
    static char buf[1024];
    size_t len = 0;
    if (dpd_net_last_error_message(buf, sizeof buf, &len) != DPD_NET_OK) return "(no message)";
    return buf;
}

/* Checks that `got` is `want` and that the last message contains `needle`. */
static void expect(const char *what, dpd_net_status got, dpd_net_status want, const char *needle) {
    const char *message = got == DPD_NET_OK ? "" : last();
    if (got != want || (needle && !strstr(message, needle))) {
        fprintf(stderr, "FAIL %s: got %s (%s), want %s containing \"%s\"\n", what,
                dpd_net_status_name((uint32_t)got), message, dpd_net_status_name((uint32_t)want),
                needle ? needle : "");
        failures++;
    } else {
        printf("ok   %s%s%s\n", what, *message ? ": " : "", message);
    }
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CA_PEM SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    const char *ca = argv[1];
    char token[512], policy[512], bad_policy[512], state[512], missing[512];
    snprintf(token, sizeof token, "%s/token", argv[2]);
    snprintf(policy, sizeof policy, "%s/policy.toml", argv[2]);
    snprintf(bad_policy, sizeof bad_policy, "%s/bad-policy.toml", argv[2]);
    snprintf(state, sizeof state, "%s/state", argv[2]);
    snprintf(missing, sizeof missing, "%s/no-such-token", argv[2]);
    write_file(token, "participant-token-c\n");
    write_file(policy, "columns = [\"age\", \"bmi\", \"target\"]\nmax_epsilon_per_job = 2.0\n"
                       "total_epsilon = 10.0\n");
    write_file(bad_policy, "columns = \"age\"\n");
    const char *url = "https://127.0.0.1:9";

    dpd_net_participant *p = NULL;
    expect("NULL url", dpd_net_participant_new(NULL, ca, token, policy, state, &p),
           DPD_NET_ERR_NULL_POINTER, "aggregator_url");
    expect("NULL out", dpd_net_participant_new(url, ca, token, policy, state, NULL),
           DPD_NET_ERR_NULL_POINTER, "out");
    expect("plain http", dpd_net_participant_new("http://127.0.0.1:9", ca, token, policy, state, &p),
           DPD_NET_ERR_INVALID_ARGUMENT, "https://");
    expect("missing token file", dpd_net_participant_new(url, ca, missing, policy, state, &p),
           DPD_NET_ERR_IO, "no-such-token");
    expect("CA that is not PEM", dpd_net_participant_new(url, token, token, policy, state, &p),
           DPD_NET_ERR_TLS, "token");
    expect("policy that does not parse",
           dpd_net_participant_new(url, ca, token, bad_policy, state, &p),
           DPD_NET_ERR_INVALID_ARGUMENT, "bad-policy.toml");
    if (p != NULL) {
        fprintf(stderr, "FAIL a failed dpd_net_participant_new wrote *out\n");
        failures++;
    }
    expect("valid files", dpd_net_participant_new(url, ca, token, policy, state, &p), DPD_NET_OK,
           NULL);
    if (!p) return 1;

    const char *names[] = {"age", "bmi", "target"};
    /* Two rows, column after column: age = 50, 60; bmi = 20, 30; target = 100, 150. */
    const double by_column[] = {50, 60, 20, 30, 100, 150};
    const double with_na[] = {50, NAN, 20, 30, 100, 150};
    const char *twice[] = {"age", "age", "target"};
    dpd_net_outcome outcome = {99, 99};
    const char *job = "00000000000000000000000000000000000000000000000000000000000000ab";

    expect("follow without rows", dpd_net_participant_follow_job(p, job, &outcome),
           DPD_NET_ERR_INVALID_STATE, "set_rows");
    expect("NA in the matrix", dpd_net_participant_set_rows(p, names, 3, with_na, 2, DPD_NET_COLUMN_MAJOR),
           DPD_NET_ERR_INVALID_ARGUMENT, "row 2, column \"age\"");
    expect("a column twice", dpd_net_participant_set_rows(p, twice, 3, by_column, 2, DPD_NET_ROW_MAJOR),
           DPD_NET_ERR_INVALID_ARGUMENT, "appears twice");
    expect("unknown layout", dpd_net_participant_set_rows(p, names, 3, by_column, 2, 7),
           DPD_NET_ERR_INVALID_ARGUMENT, "layout 7");
    expect("NULL values", dpd_net_participant_set_rows(p, names, 3, NULL, 2, DPD_NET_ROW_MAJOR),
           DPD_NET_ERR_NULL_POINTER, "values");
    expect("no rows", dpd_net_participant_set_rows(p, names, 3, by_column, 0, DPD_NET_ROW_MAJOR),
           DPD_NET_ERR_INVALID_ARGUMENT, "no data rows");
    expect("follow after failed set_rows", dpd_net_participant_follow_job(p, job, &outcome),
           DPD_NET_ERR_INVALID_STATE, "set_rows");
    expect("good rows", dpd_net_participant_set_rows(p, names, 3, by_column, 2, DPD_NET_COLUMN_MAJOR),
           DPD_NET_OK, NULL);
    expect("poll 5 ms", dpd_net_participant_set_poll_ms(p, 5), DPD_NET_ERR_INVALID_ARGUMENT,
           "outside 10..=600000");
    expect("poll 20 ms", dpd_net_participant_set_poll_ms(p, 20), DPD_NET_OK, NULL);
    expect("job id not hex", dpd_net_participant_follow_job(p, "abc", &outcome),
           DPD_NET_ERR_INVALID_ARGUMENT, "64 hex digits");
    expect("NULL outcome", dpd_net_participant_follow_job(p, job, NULL), DPD_NET_ERR_NULL_POINTER,
           "out");
    /* Nothing listens on port 9: the participant would retry forever; stopped first, it returns. */
    expect("stop", dpd_net_participant_stop(p), DPD_NET_OK, NULL);
    expect("follow once stopped", dpd_net_participant_follow_job(p, job, &outcome),
           DPD_NET_ERR_STOPPED, "stopped");
    if (outcome.state != 99 || outcome.took_part != 99) {
        fprintf(stderr, "FAIL a failed follow wrote the outcome\n");
        failures++;
    }
    expect("NULL handle", dpd_net_participant_stop(NULL), DPD_NET_ERR_NULL_POINTER, "participant");
    char small[8];
    size_t len = 0;
    expect("message into a small buffer", dpd_net_last_error_message(small, sizeof small, &len),
           DPD_NET_OK, NULL);
    if (strlen(small) != 7 || len <= 7) {
        fprintf(stderr, "FAIL truncation: \"%s\" (%zu)\n", small, len);
        failures++;
    }
    if (strcmp(dpd_net_status_name(DPD_NET_ERR_JOB), "DPD_NET_ERR_JOB") != 0 ||
        strcmp(dpd_net_status_name(1000), "DPD_NET_UNKNOWN_STATUS") != 0) {
        fprintf(stderr, "FAIL status names\n");
        failures++;
    }
    dpd_net_participant_free(p);
    dpd_net_participant_free(NULL);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all libdpdist_net argument checks passed\n");
    return 0;
}

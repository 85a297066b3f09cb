/* A minimal test harness for the C tests of the dpdist ABI: every failed check is printed and
 * counted; main returns check_exit() so the test script sees a non-zero status. */
#ifndef DPDIST_TEST_CHECK_H
#define DPDIST_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

#include "dpdist.h"

static int check_failures = 0;
static int check_count = 0;

/* The last-error message of this thread (static buffer; valid until the next call). */
static const char *last_error(void) {
    static char buf[1024];
    size_t len = 0;
    if (dpd_last_error_message(buf, sizeof buf, &len) != DPD_OK) {
        return "<dpd_last_error_message failed>";
    }
    return buf;
}

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        check_count++;                                                                       \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);         \
            check_failures++;                                                                \
        }                                                                                    \
    } while (0)

/* A call that must succeed. */
#define CHECK_OK(call)                                                                       \
    do {                                                                                     \
        dpd_status check_s_ = (call);                                                        \
        check_count++;                                                                       \
        if (check_s_ != DPD_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,        \
                    dpd_status_name((uint32_t)check_s_), last_error());                      \
            check_failures++;                                                                \
        }                                                                                    \
    } while (0)

/* A call that must fail with `expected`, leaving a last-error message that names the failing
 * function and contains `needle` (case-sensitive; "" to skip that part). */
#define CHECK_FAILS(call, expected, needle)                                                  \
    do {                                                                                     \
        dpd_status check_s_ = (call);                                                        \
        check_count++;                                                                       \
        if (check_s_ != (expected)) {                                                        \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, \
                    #call, dpd_status_name((uint32_t)check_s_),                              \
                    dpd_status_name((uint32_t)(expected)), last_error());                    \
            check_failures++;                                                                \
        } else if (strncmp(last_error(), "dpd_", 4) != 0 ||                                  \
                   strstr(last_error(), (needle)) == NULL) {                                 \
            fprintf(stderr, "%s:%d: %s: unexpected message \"%s\" (wanted \"%s\")\n",       \
                    __FILE__, __LINE__, #call, last_error(), (needle));                      \
            check_failures++;                                                                \
        }                                                                                    \
    } while (0)

static int check_exit(const char *name) {
    if (check_failures == 0) {
        printf("%s: all %d checks passed\n", name, check_count);
        return 0;
    }
    fprintf(stderr, "%s: %d of %d checks FAILED\n", name, check_failures, check_count);
    return 1;
}

#endif

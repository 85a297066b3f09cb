#!/usr/bin/env bash
# libdpdist_net (ffi/capi/net) from its hosts:
#   scripts/test-net-hosts.sh build   builds the library, makes a dev CA, runs the C argument
#                                     test (ffi/capi/net/tests/c) and compiles the C++ participant
#                                     (ffi/cpp/tests/net_participant.cpp, g++ -Werror);
#   scripts/test-net-hosts.sh job     a blr job whose twelve participants are ten `dpdist
#                                     participant` processes, the C++ program and an R session
#                                     (dpdist::participate), bit for bit equal to the in-process
#                                     fit (crates/dca-service/tests/participants.rs, ignored by a
#                                     bare `cargo test`), once with every service on SQLite and
#                                     once on PostgreSQL (DPDIST_TEST_POSTGRES; skipped loudly
#                                     when unset, a failure under CI). Needs the R package
#                                     installed in DPDIST_R_LIB (scripts/test-all.sh sets it) and
#                                     `build` first.
# Everything lands in $CARGO_TARGET_DIR/net-tests; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
out="$target/net-tests"
lib="$target/release"

case "${1:-}" in
  build)
    rm -rf "$out"
    mkdir -p "$out/scratch"
    cargo build --release -p dpdist-capi-net
    # Programs linked here ask for the SONAME (ffi/capi/net/build.rs), which cargo does not create.
    ln -sf libdpdist_net.so "$lib/libdpdist_net.so.1"
    scripts/make-dev-certs.sh "$out/certs" >/dev/null
    cc -std=c11 -Wall -Wextra -Werror -pedantic -O1 -g -Iinclude ffi/capi/net/tests/c/test_net.c \
      -o "$out/test_net" -L"$lib" -ldpdist_net -Wl,-rpath,"$lib" -lm
    "$out/test_net" "$out/certs/ca.pem" "$out/scratch"
    g++ -std=c++17 -Wall -Wextra -Werror -pedantic -O1 -Iinclude ffi/cpp/tests/net_participant.cpp \
      -o "$out/net_participant" -L"$lib" -ldpdist_net -Wl,-rpath,"$lib"
    echo "built $out/net_participant"
    ;;
  job)
    [ -x "$out/net_participant" ] || { echo "run scripts/test-net-hosts.sh build first" >&2; exit 1; }
    : "${DPDIST_R_LIB:?must name the directory where the dpdist R package is installed}"
    DPDIST_NET_CPP_PARTICIPANT="$out/net_participant" DPDIST_NET_LIB="$lib/libdpdist_net.so" \
      cargo test --release -p dca-service --test participants -- --ignored --exact \
      a_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit::sqlite \
      a_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit::postgres
    ;;
  *)
    echo "usage: scripts/test-net-hosts.sh build|job" >&2
    exit 2
    ;;
esac

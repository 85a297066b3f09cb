#!/usr/bin/env bash
# libdpdist_net (ffi/capi/net) from its hosts:
#   scripts/test-net-hosts.sh build   builds the library and installs it as a package (ffi/cpp
#                                     with -DDPDIST_WITH_NET=ON, into a prefix then MOVED), makes
#                                     a dev CA; from the moved prefix: pkg-config dpdist_net builds
#                                     and runs the C argument test (ffi/capi/net/tests/c), and a
#                                     consumer project (ffi/cpp/consumer-net: find_package(dpdist
#                                     COMPONENTS net)) builds the C++ participant
#                                     (ffi/cpp/tests/net_participant.cpp, -Werror) the job runs;
#   scripts/test-net-hosts.sh job     a blr job whose twelve participants are ten `dpdist
#                                     participant` processes, the C++ program and an R session
#                                     (dpdist::participate), bit for bit equal to the in-process
#                                     fit, then the same job with every round verified
#                                     (crates/dca-service/tests/integration/participants.rs, ignored by a
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
    cargo build --release -p dpdist-capi -p dpdist-capi-net
    cmake -S ffi/cpp -B "$out/package" -DCMAKE_BUILD_TYPE=Release -DDPDIST_WITH_NET=ON \
      -DDPDIST_BUILD_TESTS=OFF >/dev/null
    cmake --install "$out/package" --prefix "$out/installed" >/dev/null
    mv "$out/installed" "$out/moved"
    prefix="$out/moved"
    net_soname="libdpdist_net.so.$(sed -n 's/^#define DPD_NET_ABI_VERSION \([0-9]*\)$/\1/p' include/dpdist_net.h)"
    readelf -d "$prefix/lib/$net_soname" | grep -q "Library soname: \[$net_soname\]" \
      || { echo "$prefix/lib/$net_soname has no SONAME $net_soname" >&2; exit 1; }
    [ "$(readlink "$prefix/lib/libdpdist_net.so")" = "$net_soname" ] \
      || { echo "libdpdist_net.so link missing from the install" >&2; exit 1; }
    scripts/make-dev-certs.sh "$out/certs" >/dev/null
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    [ "$(realpath "$(pkg-config --variable=prefix dpdist_net)")" = "$(realpath "$prefix")" ] \
      || { echo "dpdist_net.pc prefix does not follow the moved .pc file" >&2; exit 1; }
    read -r -a flags <<< "$(pkg-config --cflags --libs dpdist_net)"
    cc -std=c11 -Wall -Wextra -Werror -pedantic -O1 -g ffi/capi/net/tests/c/test_net.c \
      -o "$out/test_net" "${flags[@]}" -Wl,-rpath,"$prefix/lib" -lm
    "$out/test_net" "$out/certs/ca.pem" "$out/scratch"
    cmake -S ffi/cpp/consumer-net -B "$out/consumer" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
    cmake --build "$out/consumer" >/dev/null
    readelf -d "$out/consumer/net_participant" | grep -q "NEEDED.*\[$net_soname\]" \
      || { echo "net_participant does not ask for $net_soname" >&2; exit 1; }
    ln -sf "$out/consumer/net_participant" "$out/net_participant"
    # Asking for a component the package was installed without names it.
    cmake -S ffi/cpp -B "$out/package-core" -DCMAKE_BUILD_TYPE=Release -DDPDIST_BUILD_TESTS=OFF >/dev/null
    cmake --install "$out/package-core" --prefix "$out/core" >/dev/null
    if cmake -S ffi/cpp/consumer-net -B "$out/consumer-core" -DCMAKE_PREFIX_PATH="$out/core" \
        >"$out/consumer-core.log" 2>&1; then
      echo "find_package(dpdist COMPONENTS net) succeeded on a package without libdpdist_net" >&2
      exit 1
    fi
    grep -q "DPDIST_WITH_NET=ON" "$out/consumer-core.log" \
      || { cat "$out/consumer-core.log" >&2; echo "the missing component is not named" >&2; exit 1; }
    echo "built $out/net_participant"
    ;;
  job)
    [ -x "$out/net_participant" ] || { echo "run scripts/test-net-hosts.sh build first" >&2; exit 1; }
    : "${DPDIST_R_LIB:?must name the directory where the dpdist R package is installed}"
    DPDIST_NET_CPP_PARTICIPANT="$out/net_participant" DPDIST_NET_LIB="$out/moved/lib/libdpdist_net.so" \
      cargo test --release -p dca-service --test integration -- --ignored --exact \
      participants::a_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit::case_1_sqlite \
      participants::a_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit::case_2_postgres \
      participants::a_verified_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit::case_1_sqlite \
      participants::a_verified_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit::case_2_postgres
    ;;
  *)
    echo "usage: scripts/test-net-hosts.sh build|job" >&2
    exit 2
    ;;
esac

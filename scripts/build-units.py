#!/usr/bin/env python3
"""Counts the units (crate compilations) each cargo command of a sequence adds to one target
directory, without building anything: cargo's unit graph (`cargo +nightly ... --unit-graph
-Z unstable-options`, so a nightly toolchain is needed; nothing is compiled) gives every unit
with its package, target, mode, profile, features and dependencies; a unit is reused when an
earlier command of the sequence had the same one with the same dependencies (what cargo's
-C metadata hash covers). Deterministic, unlike timings on a shared machine.

    scripts/build-units.py user     # --workspace --bins --examples, then -p dca-service, then capi
    scripts/build-units.py ci       # .ci/run's cargo commands up to the book, in their order
    scripts/build-units.py ci -v    # also name the dependencies each command compiles again

Results and the commands that made them: docs/src/results/build.md."""
import hashlib, json, subprocess, sys

SEQUENCES = {
    "user": [
        "build --release --workspace --bins --examples",
        "build --release -p dca-service",
        "build --release -p dpdist-capi -p dpdist-capi-net",
    ],
    "ci": [  # .ci/run, then scripts/test-all.sh and the scripts it calls, in order
        "clippy --workspace --all-targets",
        "doc --workspace --no-deps",
        "test --workspace --release --no-run",
        "clippy -p dca-service --no-default-features --lib",  # test-all.sh
        "build -p dpdist-capi --release",  # test-c.sh
        "build -p dpdist-capi --release",  # test-c-sanitizers.sh
        "build -p dpdist-capi --release",  # test-cpp.sh
        "build --release -p dpdist-capi -p dpdist-capi-net",  # test-net-hosts.sh build
        "test --release -p dca-service --test integration --no-run",  # test-net-hosts.sh job
        "test --release --doc -p dpdist",  # test-book.sh
        "build -p dpdist-capi --release",  # test-book.sh
    ],
}


def units(cmd):
    args = cmd.split()
    tool = None
    if args[0] == "clippy":  # clippy checks dependencies as `cargo check` does
        args[0], tool = "check", "clippy"
    out = subprocess.run(["cargo", "+nightly"] + args + ["--unit-graph", "-Z", "unstable-options"],
                         capture_output=True, text=True, check=True).stdout
    us = json.loads(out)["units"]
    keys = [None] * len(us)

    def key(i):
        if keys[i] is None:
            u = us[i]
            member = u["pkg_id"].startswith("path+")
            prof = {k: v for k, v in u["profile"].items() if k != "name"}
            d = [u["pkg_id"], u["target"]["kind"], u["target"]["name"], u["mode"], prof,
                 u["platform"], u["features"], sorted(key(x["index"]) for x in u["dependencies"]),
                 tool if member and u["mode"] == "check" else None]
            keys[i] = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()
        return keys[i]

    return [(key(i), u) for i in range(len(us)) for u in [us[i]]]


def main():
    seq = SEQUENCES[sys.argv[1] if len(sys.argv) > 1 else "user"]
    verbose = "-v" in sys.argv
    seen, total = set(), {"dep": 0, "member": 0}
    print(f'{"units":>6} {"new deps":>9} {"new members":>12}   command')
    for cmd in seq:
        got = units(cmd)
        new = {"dep": [], "member": []}
        for k, u in got:
            if k in seen:
                continue
            seen.add(k)
            if u["mode"] == "run-custom-build":  # a build script's run; its compile is counted
                continue
            kind = "member" if u["pkg_id"].startswith("path+") else "dep"
            new[kind].append(u["pkg_id"].rsplit("#", 1)[-1])
        total["dep"] += len(new["dep"])
        total["member"] += len(new["member"])
        print(f'{len(got):6d} {len(new["dep"]):9d} {len(new["member"]):12d}   cargo {cmd}')
        if verbose and new["dep"]:
            print("         again:", " ".join(sorted(new["dep"])))
    print(f'{"total":>6} {total["dep"]:9d} {total["member"]:12d}')


main()

#!/usr/bin/env python3
"""Every package shared by the cargo selections that CI and users run must resolve to the same
features in each, so that each `-p` build reuses what an earlier build compiled (issue 42, item 6;
docs/src/results/build.md). Compares `cargo tree` feature sets (no build, a few seconds); prints
each package whose features differ and which selection lacks what."""
import subprocess, sys

# (name, cargo tree arguments); dev edges where the command builds tests, examples or benches.
SELECTIONS = [
    ("workspace + dev (test --workspace, build --examples, clippy --all-targets)",
     ["--workspace", "-e", "normal,build,dev"]),
    ("workspace (doc, build --workspace)", ["--workspace", "-e", "normal,build"]),
    ("-p dca-service", ["-p", "dca-service", "-e", "normal,build"]),
    ("-p dca-service + dev (test -p dca-service)", ["-p", "dca-service", "-e", "normal,build,dev"]),
    ("-p dca-service --no-default-features", ["-p", "dca-service", "--no-default-features", "-e", "normal,build"]),
    ("-p dpdist-capi", ["-p", "dpdist-capi", "-e", "normal,build"]),
    ("-p dpdist-capi -p dpdist-capi-net", ["-p", "dpdist-capi", "-p", "dpdist-capi-net", "-e", "normal,build"]),
    ("-p dpdist + dev (test --doc -p dpdist)", ["-p", "dpdist", "-e", "normal,build,dev"]),
]


def features(args):
    out = subprocess.run(["cargo", "tree", "--locked", "--prefix", "none", "-f", "{p}|{f}"] + args,
                         check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        line = line.replace(" (*)", "").replace(" (proc-macro)", "").strip()
        if not line or line.startswith("["):
            continue
        pkg, _, feats = line.partition("|")
        if pkg.split()[-1].startswith("("):  # a workspace member: its features are the command's
            continue
        got.setdefault(pkg, set()).update(f for f in feats.split(",") if f)
    return got


resolved = [(name, features(args)) for name, args in SELECTIONS]
union = {}
for _, got in resolved:
    for pkg, feats in got.items():
        union.setdefault(pkg, set()).update(feats)
bad = 0
for pkg in sorted(union):
    for name, got in resolved:
        if pkg in got and got[pkg] != union[pkg]:
            bad += 1
            print(f"{pkg}: {name} lacks {', '.join(sorted(union[pkg] - got[pkg]))}")
if bad:
    print(f"\n{bad} package/selection pairs differ: a `-p` build would compile those packages "
          "(and everything above them) again. Pin the missing features where the package enters "
          "the build (see docs/src/results/build.md).", file=sys.stderr)
    sys.exit(1)
print(f"features agree across {len(SELECTIONS)} selections ({len(union)} packages)")

#!/usr/bin/env bash
# Places in ffi/r everything `R CMD INSTALL` needs to build the Rust static library offline,
# so that `R CMD build ffi/r` makes a self-contained source tarball (CRAN's "Using Rust in CRAN
# packages": vendored crates, no download at install time). Writes (all git-ignored):
#   ffi/r/src/rust/Cargo.toml         a workspace of only the crates ffi/capi needs (dpdist-capi
#                                     and its path dependencies; manifests without dev-dependencies,
#                                     so no test-only crate is vendored)
#   ffi/r/src/rust/Cargo.lock         the repository's Cargo.lock pruned to them: same versions,
#                                     checked below
#   ffi/r/src/rust/<crate dirs>       Cargo.toml, build.rs and src/ of each of those crates
#   ffi/r/src/rust/include/dpdist.h   the C header (and dpdist_net.h: types only, for net.c)
#   ffi/r/src/rust/vendor.tar.xz      `cargo vendor` of their registry dependencies
#   ffi/r/inst/AUTHORS                name, version, license and authors of every vendored crate
# Needs cargo and crates.io (or a cargo cache holding every crate of Cargo.lock) and python3.
# configure runs it when ffi/r is installed from a git checkout; run it yourself before
# `R CMD build ffi/r`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
pkg="$root/ffi/r"
stage="$pkg/src/rust"

# The crates' sources are copied afresh every time (cheap); the vendored dependencies are
# reused when nothing they depend on changed (see the stamp below), since cargo vendor and xz
# take minutes.
previous=$(mktemp -d)
trap 'rm -rf "$previous"' EXIT
for f in vendor.tar.xz Cargo.lock vendor-stamp.txt; do
  if [ -f "$stage/$f" ]; then mv "$stage/$f" "$previous/"; fi
done
rm -rf "$stage"
mkdir -p "$stage/include" "$pkg/inst"
cp include/dpdist.h include/dpdist_net.h "$stage/include/"

# Manifests: the path-dependency closure of ffi/capi, and a workspace holding only it.
python3 - "$root" "$stage" <<'PY'
import pathlib, re, shutil, sys, tomllib

root, stage = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
ws = tomllib.loads((root / "Cargo.toml").read_text())
ws_deps = ws["workspace"]["dependencies"]

def local_deps(manifest_dir):
    """Relative dirs of the path dependencies (normal and build) of one crate."""
    m = tomllib.loads((manifest_dir / "Cargo.toml").read_text())
    tables = [m.get("dependencies", {}), m.get("build-dependencies", {})]
    for target in m.get("target", {}).values():
        tables += [target.get("dependencies", {}), target.get("build-dependencies", {})]
    out = []
    for table in tables:
        for name, spec in table.items():
            base = manifest_dir  # a path in a crate's manifest is relative to it,
            if isinstance(spec, dict) and spec.get("workspace"):
                spec, base = ws_deps[name], root  # one inherited from the workspace to the root
            if isinstance(spec, dict) and "path" in spec:
                out.append((base / spec["path"]).resolve().relative_to(root))
    return out

members, todo = [], [pathlib.Path("ffi/capi")]
while todo:
    rel = todo.pop()
    if rel in members:
        continue
    members.append(rel)
    todo += local_deps(root / rel)
members.sort()

# A manifest section header: [dev-dependencies], [dev-dependencies.x],
# [target.'cfg(...)'.dev-dependencies] and friends are dropped with their bodies.
DEV = re.compile(r"^\[+\s*(target\.[^\]]*\.)?dev-dependencies(\.[^\]]*)?\s*\]+\s*$")
HEADER = re.compile(r"^\s*\[")
for rel in members:
    src, dst = root / rel, stage / rel
    dst.mkdir(parents=True)
    keep, lines = True, []
    for line in (src / "Cargo.toml").read_text().splitlines():
        if HEADER.match(line):
            keep = not DEV.match(line.strip())
        if keep:
            lines.append(line)
    (dst / "Cargo.toml").write_text("\n".join(lines) + "\n")
    shutil.copytree(src / "src", dst / "src")
    if (src / "build.rs").exists():
        shutil.copy2(src / "build.rs", dst / "build.rs")

def value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)

def key(k):
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else value(k)

def table(name, entries):
    return f"[{name}]\n" + "".join(f"{key(k)} = {value(v)}\n" for k, v in entries.items()) + "\n"

member_dirs = {str(m) for m in members}
deps = {
    name: spec for name, spec in ws_deps.items()
    if not (isinstance(spec, dict) and "path" in spec and spec["path"] not in member_dirs)
}
release = dict(ws.get("profile", {}).get("release", {}))
release["debug"] = False  # the R package links the library once; no debug info to carry
text = (
    "# GENERATED by scripts/vendor-r.sh from the dpdist workspace: the crates the R package\n"
    "# builds (ffi/capi and its path dependencies), nothing of the network stack.\n"
    + table("workspace", {"members": [str(m) for m in members],
                          "resolver": ws["workspace"].get("resolver", "3")})
    + table("workspace.package", ws["workspace"]["package"])
    + table("workspace.dependencies", deps)
)
for group, lints in ws["workspace"].get("lints", {}).items():
    text += table(f"workspace.lints.{group}", lints)
text += table("profile.release", release)
(stage / "Cargo.toml").write_text(text)
print("vendor-r: crates " + " ".join(str(m) for m in members))
PY

# The vendored set follows from the lock file, the staged manifests and this script.
stamp=$(cat Cargo.lock scripts/vendor-r.sh $(cd "$stage" && find . -name Cargo.toml | sort | sed "s|^|$stage/|") |
  sha256sum | cut -d' ' -f1)
if [ -f "$previous/vendor-stamp.txt" ] && [ "$(cat "$previous/vendor-stamp.txt")" = "$stamp" ] &&
  [ -f "$previous/vendor.tar.xz" ] && [ -f "$previous/Cargo.lock" ] && [ -f "$pkg/inst/AUTHORS" ]; then
  mv "$previous/vendor.tar.xz" "$previous/Cargo.lock" "$previous/vendor-stamp.txt" "$stage/"
  echo "vendor-r: dependencies unchanged since the last run: kept vendor.tar.xz and inst/AUTHORS"
  exit 0
fi
rm -f "$pkg/inst/AUTHORS"

cp Cargo.lock "$stage/Cargo.lock"
echo "vendor-r: cargo vendor (registry dependencies of those crates)"
# cargo vendor prunes the lock file to this workspace; --locked would refuse that pruning, so the
# versions are compared with the repository's lock file below instead.
(cd "$stage" && cargo vendor --quiet vendor >/dev/null)

python3 - "$root/Cargo.lock" "$stage/Cargo.lock" <<'PY'
import sys, tomllib
repo, staged = (tomllib.load(open(p, "rb")) for p in sys.argv[1:3])
known = {(p["name"], p["version"]) for p in repo["package"]}
new = [f'{p["name"]} {p["version"]}' for p in staged["package"] if (p["name"], p["version"]) not in known]
if new:
    sys.exit("vendor-r: the pruned lock file has versions the repository's Cargo.lock lacks "
             "(run cargo update in the repository first): " + ", ".join(new))
PY

# Crates that no supported platform compiles (Windows-only ones, cfg(loom) test tooling) stay in
# the vendor directory as stubs: manifest, checksum of the original package and license files,
# no code; cargo's resolver reads only their manifest. This takes the archive from ~180 MB of
# sources to the part that is built. The R package builds on these targets (no Makevars.win):
targets="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin"
for t in $targets; do
  cargo tree --offline --locked -p dpdist-capi -e normal,build --target "$t" --prefix none -f '{p}'
done | sort -u > "$stage/used-crates.txt"
python3 - "$stage/vendor" "$stage/used-crates.txt" <<'PY'
import json, pathlib, shutil, sys, tomllib
vendor, used_file = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
used = set()
for line in used_file.read_text().splitlines():
    parts = line.split()
    if len(parts) >= 2 and parts[1].startswith("v"):
        used.add((parts[0], parts[1][1:]))
stubbed = 0
for crate in sorted(p for p in vendor.iterdir() if p.is_dir()):
    manifest = tomllib.loads((crate / "Cargo.toml").read_text())
    pkg = manifest["package"]
    if (pkg["name"], pkg["version"]) in used:
        continue
    checksum = json.loads((crate / ".cargo-checksum.json").read_text())
    keep = {"Cargo.toml"}
    for item in list(crate.iterdir()):
        if item.name in keep or item.name.upper().startswith(("LICENSE", "COPYING", "NOTICE")):
            continue
        shutil.rmtree(item) if item.is_dir() else item.unlink()
    # Every source file the manifest names exists (empty), so loading the manifest never fails.
    paths = [manifest.get("lib", {}).get("path", "src/lib.rs")]
    if isinstance(pkg.get("build"), str):
        paths.append(pkg["build"])
    for kind in ("bin", "example", "test", "bench"):
        paths += [t["path"] for t in manifest.get(kind, []) if "path" in t]
    for rel in paths:
        (crate / rel).parent.mkdir(parents=True, exist_ok=True)
        (crate / rel).write_text("// stub: not built on the platforms the R package supports\n")
    (crate / ".cargo-checksum.json").write_text(
        json.dumps({"files": {}, "package": checksum.get("package")}))
    (crate / "STUB").write_text("Not built on x86_64/aarch64 Linux or macOS: sources removed by "
                                "scripts/vendor-r.sh.\n")
    stubbed += 1
print(f"vendor-r: {stubbed} crates no supported platform builds are stubs (manifest and license only)")
PY
rm "$stage/used-crates.txt"

python3 - "$stage/vendor" "$pkg/inst/AUTHORS" <<'PY'
import pathlib, sys, textwrap, tomllib
vendor, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
rows, stubs = [], []
for manifest in sorted(vendor.glob("*/Cargo.toml")):
    p = tomllib.loads(manifest.read_text())["package"]
    if (manifest.parent / "STUB").exists():
        stubs.append(f'{p["name"]} {p["version"]} ({p.get("license", "see its license file")})')
        continue
    version = p.get("version")
    license = p.get("license") or ("see " + p["license-file"] if "license-file" in p else "unknown")
    authors = p.get("authors") or []
    rows.append((p["name"], version, license, ", ".join(authors) or "not stated in Cargo.toml",
                 p.get("repository", "")))
lines = [
    "The R package dpdist bundles, in src/rust/vendor.tar.xz, the source code of the following",
    "Rust crates (from crates.io), which are compiled into its shared library. Each remains under",
    "its own license and copyright; their authors are listed as stated in each crate's Cargo.toml",
    "(the full license texts ship inside each crate's directory in the vendor archive).",
    "GENERATED by scripts/vendor-r.sh.",
    "",
]
for name, version, license, authors, repo in rows:
    lines.append(f"{name} {version}")
    lines.append(f"  license: {license}")
    lines.append(f"  authors: {authors}")
    if repo:
        lines.append(f"  source:  {repo}")
lines.append("")
lines += textwrap.wrap(
    f"{len(rows)} crates compiled. Present only as manifest stubs, their code removed because no "
    "supported platform builds them (Windows-only and cfg(loom) crates): " + ", ".join(stubs) + ".",
    width=95)
out.write_text("\n".join(lines) + "\n")
print(f"vendor-r: {len(rows)} compiled crates credited in {out}")
PY

# A reproducible archive (sorted names, fixed owner and mtime): the tarball stays byte-stable
# when nothing changed, and deep vendor paths are not subject to R's path-length checks.
(cd "$stage" &&
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' \
    -cf - vendor | xz -6 -T1 > vendor.tar.xz &&
  rm -rf vendor)
echo "$stamp" > "$stage/vendor-stamp.txt"
echo "vendor-r: $(du -h "$stage/vendor.tar.xz" | cut -f1) src/rust/vendor.tar.xz, $(du -sh "$stage" | cut -f1) in src/rust"

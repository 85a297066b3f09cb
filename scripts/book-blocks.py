#!/usr/bin/env python3
"""Finds the fenced code blocks of README.md and docs/src/**/*.md and sorts them by the book's
convention (docs/src/contributing.md):

  rust            a doctest: cargo test --doc -p dpdist runs it (src/lib.rs includes each page;
                  rust,no_run and rust,ignore as rustdoc means them)
  c, cpp          a whole program: compiled against the built library and run; must exit 0
  r               run by Rscript against the installed R package
  sh,run          run by bash from the repository root (loopback only, bounded in time)
  LANG,norun      shown, never run (a fragment, or a host with no interpreter here)
  sh, text, ...   shown, never run (commands for the reader's machine, output, data)

A fence without a language, or with one that is not listed, is an error: rustdoc would take an
unlabelled block for Rust, and a typo would silently skip a program.

  book-blocks.py check            check every fence; print a summary
  book-blocks.py extract DIR      also write the runnable c, cpp, r and sh,run blocks into DIR
                                  (one file each, named after page and line), and DIR/manifest.tsv
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUN = {"c": ".c", "cpp": ".cpp", "r": ".R", "sh,run": ".sh"}
RUST = {"rust", "rust,no_run", "rust,ignore"}  # rustdoc's own attributes
SHOWN = {"sh", "text", "json", "toml", "console", "http"}
NORUN_OK = {"c", "cpp", "r", "julia", "sh"}


def pages():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs" / "src").rglob("*.md"))


def blocks(path):
    """(line, info, code) of every fenced block; an unclosed fence is an error."""
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i + 1
        j = start
        while j < len(lines) and not re.match(r"^\s*" + re.escape(fence) + r"\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise SystemExit(f"{path.relative_to(ROOT)}:{start}: unclosed code fence")
        code = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in lines[start:j])
        yield start, info, code + "\n"
        i = j + 1


def kind(info):
    """'run:LANG', 'rust', 'shown', or None (not allowed)."""
    if info in RUN:
        return "run:" + info
    if info in RUST:
        return "rust"
    if info in SHOWN:
        return "shown"
    if info.endswith(",norun") and info[: -len(",norun")] in NORUN_OK:
        return "shown"
    return None


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("check", "extract"):
        raise SystemExit(__doc__)
    out = pathlib.Path(sys.argv[2]) if sys.argv[1] == "extract" else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("*"):
            if old.is_file():
                old.unlink()
    errors, counts, manifest = [], {}, []
    lib_rs = (ROOT / "src" / "lib.rs").read_text(encoding="utf-8")
    for page in pages():
        rel = page.relative_to(ROOT)
        for line, info, code in blocks(page):
            k = kind(info)
            if k is None:
                errors.append(f"{rel}:{line}: code block with language {info!r}: give it one of "
                              f"{sorted(RUN) + sorted(RUST) + sorted(SHOWN)} or LANG,norun "
                              "(docs/src/contributing.md)")
                continue
            counts[k] = counts.get(k, 0) + 1
            if k == "rust" and f'include_str!("../{rel}")' not in lib_rs:
                errors.append(f"{rel}:{line}: a Rust block on a page that src/lib.rs does not "
                              "include (#[doc = include_str!(...)] in its `book` module)")
            if k.startswith("run:") and out:
                lang = k[4:]
                name = re.sub(r"[^A-Za-z0-9]+", "_", str(rel.with_suffix(""))) + f"_L{line}"
                (out / (name + RUN[lang])).write_text(code, encoding="utf-8")
                manifest.append(f"{lang}\t{name}{RUN[lang]}\t{rel}:{line}")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        raise SystemExit(1)
    if out:
        (out / "manifest.tsv").write_text("".join(m + "\n" for m in manifest), encoding="utf-8")
    print("code blocks: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()

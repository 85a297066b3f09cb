#!/usr/bin/env python3
"""Checks that every relative link, image and #anchor in the project's Markdown resolves:
README.md, CHANGELOG.md, SECURITY.md, docs/src/**/*.md and the README.md of each crate under
crates/ and ffi/. A link to a file must name one that exists (relative to the page); a #anchor
must name a heading of its page (slugs as mdBook and GitHub make them: lower case, letters,
digits, '-' and '_' kept, spaces to '-', the rest dropped, repeats numbered -1, -2, ...) or an
explicit id="..." in it. External links (http:, https:, mailto:) are not fetched. Exits non-zero
and lists every broken link.   Usage: scripts/check-links.py [--self-test]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOOK = ROOT / "docs" / "src"


def pages():
    for name in ("README.md", "CHANGELOG.md", "SECURITY.md"):
        if (ROOT / name).exists():
            yield ROOT / name
    yield from sorted((ROOT / "docs" / "src").rglob("*.md"))
    yield from sorted(ROOT.glob("crates/*/README.md"))
    yield from sorted(ROOT.glob("ffi/*/README.md"))


def prose(text):
    """The text without fenced code blocks and inline code spans (links there are not links)."""
    text = re.sub(r"^(\s*)(```+|~~~+).*?^\1\2[ \t]*$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text, flags=re.S)


def slug(heading):
    heading = re.sub(r"<[^>]+>", "", heading)                # inline HTML
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    heading = heading.replace("`", "").strip().lower()
    return "".join(c for c in heading.replace(" ", "-") if c.isalnum() or c in "-_")


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        text = path.read_text(encoding="utf-8")
        found, seen = set(), {}
        code = False
        for line in text.split("\n"):
            if re.match(r"^\s*(```|~~~)", line):
                code = not code
                continue
            m = None if code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        found.update(re.findall(r"""\bid=["']([^"']+)["']""", text))
        _anchor_cache[path] = found
    return _anchor_cache[path]


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def broken_links(page):
    text = prose(page.read_text(encoding="utf-8"))
    for target in LINK.findall(text) + REF.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        dest = page if not path_part else (page.parent / path_part).resolve()
        if not dest.exists():
            yield target, "no such file"
        elif BOOK in page.parents and BOOK not in dest.parents and dest != BOOK:
            # The rendered book holds only docs/src: a link out of it is broken in the HTML.
            yield target, "leaves docs/src (broken in the rendered book; name the file instead)"
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            yield target, "no such heading or id"


def self_test():
    assert slug("Every object's life cycle") == "every-objects-life-cycle"
    assert slug("Running the parties as separate processes (`dpdist`)") == \
        "running-the-parties-as-separate-processes-dpdist"
    assert slug("DCA, the paper's Table 1") == "dca-the-papers-table-1"
    assert prose("a `[x](nowhere.md)` b\n```c\n[y](gone.md)\n```\n") .count("](") == 0
    assert LINK.findall("see [a](b.md#c) and ![i](f.svg \"t\")") == ["b.md#c", "f.svg"]
    print("check-links self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    bad, n = [], 0
    for page in pages():
        for target, why in broken_links(page):
            bad.append(f"{page.relative_to(ROOT)}: ({target}) {why}")
        n += 1
    if bad:
        print("\n".join(bad), file=sys.stderr)
        raise SystemExit(f"{len(bad)} broken link(s) in {n} pages")
    print(f"links: every relative link and anchor in {n} pages resolves")


if __name__ == "__main__":
    main()

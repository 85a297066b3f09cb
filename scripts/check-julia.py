#!/usr/bin/env python3
"""Statically checks the Julia bindings (ffi/julia/DpDist/src) against include/dpdist.h.

No Julia binary is needed. For every `@ccall libdpdist.NAME(arg::T, ...)::R` in the Julia
sources it checks that
  - NAME is a function declared in the header,
  - the number of arguments matches the C prototype,
  - each argument type and the return type map to the C type (size_t -> Csize_t,
    uint64_t -> UInt64, double -> Cdouble, dpd_rng ** -> Ref{Ptr{dpd_rng}} or
    Ptr{Ptr{dpd_rng}}, C enums -> Cint, ...; see `julia_types_for`).
For every Julia `struct` named like a header type it checks that an opaque C struct has no
fields in Julia and that a C struct with fields has the same field names, order and types.

Usage: scripts/check-julia.py [--header include/dpdist.h] [--src ffi/julia/DpDist/src] [-v]
       scripts/check-julia.py --self-test   (plants known mistakes in a copy; all must be caught)
Exit status 0 when everything matches, 1 with one line per problem otherwise.
"""

import argparse
import pathlib
import re
import shutil
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

# C scalar type -> accepted Julia spellings (all of the same size and signedness).
SCALARS = {
    "void": ["Cvoid", "Nothing"],
    "bool": ["Bool"],
    "char": ["Cchar", "UInt8", "Int8"],
    "int8_t": ["Int8"],
    "uint8_t": ["UInt8", "Cuchar"],
    "int16_t": ["Int16", "Cshort"],
    "uint16_t": ["UInt16", "Cushort"],
    "int32_t": ["Int32", "Cint"],
    "uint32_t": ["UInt32", "Cuint"],
    "int64_t": ["Int64", "Clonglong"],
    "uint64_t": ["UInt64", "Culonglong"],
    "int": ["Cint", "Int32"],
    "unsigned int": ["Cuint", "UInt32"],
    "size_t": ["Csize_t", "UInt"],
    "ptrdiff_t": ["Cptrdiff_t", "Int"],
    "intptr_t": ["Cintptr_t", "Int"],
    "uintptr_t": ["Cuintptr_t", "UInt"],
    "float": ["Cfloat", "Float32"],
    "double": ["Cdouble", "Float64"],
}


class Header:
    """Functions, enums, opaque structs and structs with fields declared in a C header."""

    def __init__(self, text):
        self.functions = {}  # name -> (return type, [param types])
        self.enums = set()
        self.opaque = set()
        self.structs = {}  # name -> [(field name, type)]
        self.typedefs = {}  # alias -> underlying scalar type
        self._parse(text)

    def _parse(self, text):
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        text = re.sub(r'extern\s+"C"\s*\{', " ", text)
        for stmt in split_statements(text):
            stmt = " ".join(stmt.split())
            if not stmt or stmt == "}":
                continue
            if stmt.startswith("typedef"):
                self._typedef(stmt)
            elif re.match(r"^(enum|struct)\s+\w+\s*\{", stmt):
                self._tagged(stmt, None)
            elif "(" in stmt:
                self._function(stmt)

    def _tagged(self, stmt, alias):
        m = re.match(r"^(enum|struct)\s+(\w+)?\s*\{(.*)\}\s*(\w+)?$", stmt)
        if not m:
            return
        kind, tag, body, name = m.groups()
        for n in {tag, name, alias} - {None}:
            if kind == "enum":
                self.enums.add(n)
            else:
                self.structs[n] = [parse_decl(f) for f in body.split(";") if f.strip()]

    def _typedef(self, stmt):
        body = stmt[len("typedef"):].strip()
        if body.startswith("enum") or (body.startswith("struct") and "{" in body):
            self._tagged(body, None)
            return
        m = re.match(r"^struct\s+(\w+)\s+(\w+)$", body)
        if m:
            if m.group(1) not in self.structs:
                self.opaque.add(m.group(2))
            return
        m = re.match(r"^(enum)\s+(\w+)\s+(\w+)$", body)
        if m:
            self.enums.add(m.group(3))
            return
        name, ctype = parse_decl(body)
        self.typedefs[name] = ctype

    def _function(self, stmt):
        m = re.match(r"^(.*?)\b(\w+)\s*\((.*)\)$", stmt)
        if not m:
            return
        ret, name, params = m.groups()
        ret = normalise(ret)
        params = params.strip()
        if params in ("", "void"):
            types = []
        else:
            types = [parse_decl(p)[1] for p in params.split(",")]
        self.functions[name] = (ret, types)


def split_statements(text):
    """Splits at ';' outside braces; a braced typedef stays one statement."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == ";" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def normalise(ctype):
    """'const dpd_rng  *' -> 'const dpd_rng*' (const kept: a mutable buffer must not be const)."""
    ctype = " ".join(ctype.replace("*", " * ").split())
    ctype = re.sub(r"\b(struct|enum)\s+", "", ctype)
    return ctype.replace(" *", "*")


def parse_decl(decl):
    """'const double *values' -> ('values', 'const double*'); arrays are not used by the ABI."""
    decl = " ".join(decl.replace("*", " * ").split())
    m = re.match(r"^(.*?)(\w+)$", decl)
    if not m or not m.group(1).strip():
        return ("", normalise(decl))
    return (m.group(2), normalise(m.group(1)))


def julia_types_for(ctype, header, position):
    """Accepted Julia spellings of a C type; position is 'arg', 'ret' or 'field'."""
    ctype = ctype.strip()
    if ctype.endswith("*"):
        # `T *const` is a const pointer to T: the qualifier binds to the pointer, not to T.
        inner = re.sub(r"\s*\bconst$", "", ctype[:-1].strip())
        bare = re.sub(r"^const\s+", "", inner)
        if inner.endswith("*"):
            # A pointer to pointers (`const char *const *`, an array of strings): its element
            # keeps its own const, so `const char *` elements may be Cstring.
            targets = julia_types_for(inner, header, "pointee")
        else:
            targets = julia_types_for(bare, header, "pointee")
        if bare == "char" and inner.startswith("const"):
            extra = ["Cstring"]  # a NUL-terminated string
        else:
            extra = []
        if bare == "void":
            targets = ["Cvoid", "Nothing"]
        spellings = [f"Ptr{{{t}}}" for t in targets] + extra
        if position == "arg":
            # Ref{T} passes a pointer to one T; Ptr{T} also takes arrays. Any pointee is fine
            # for Ptr{Cvoid} in C terms, but we insist on the exact type to catch mistakes.
            spellings += [f"Ref{{{t}}}" for t in targets]
        return spellings
    bare = re.sub(r"^const\s+", "", ctype)
    if bare in SCALARS:
        return SCALARS[bare]
    if bare in header.typedefs:
        return julia_types_for(header.typedefs[bare], header, position)
    if bare in header.enums:
        return ["Cint"]  # C enums are int-sized (every value here fits in int)
    if bare in header.opaque or bare in header.structs:
        if position == "pointee":
            return [bare]
        return [bare]  # by value: the Julia mirror struct of the same name
    return [f"<unknown C type {bare}>"]


# ---- Julia side ------------------------------------------------------------------------------

def strip_julia_comments(text):
    text = re.sub(r"#=.*?=#", " ", text, flags=re.S)
    out = []
    for line in text.splitlines():
        # Drop '#' comments outside strings (the sources use no '#' inside strings).
        in_str = False
        cut = len(line)
        for i, ch in enumerate(line):
            if ch == '"':
                in_str = not in_str
            elif ch == "#" and not in_str:
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


def matching(text, start, open_ch, close_ch):
    """Index just past the bracket matching text[start] == open_ch."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = text.index('"', i + 1)
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced brackets")


def split_top(text, sep=","):
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = text.index('"', i + 1)
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def type_annotation(expr):
    """'length(v)::Csize_t' -> ('length(v)', 'Csize_t') using the last top-level '::'."""
    depth, last = 0, -1
    i = 0
    while i < len(expr) - 1:
        ch = expr[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and expr[i:i + 2] == "::":
            last = i
            i += 1
        i += 1
    if last < 0:
        return (expr.strip(), None)
    return (expr[:last].strip(), "".join(expr[last + 2:].split()))


def julia_ccalls(path, text):
    """Yields (line, library, function, [arg types], return type) for each @ccall."""
    # Both `@ccall lib.f(...)::R` and the parenthesised `@ccall(lib.f(...)::R)`.
    for m in re.finditer(r"@ccall(?:\s+|\s*\(\s*)([\w.]+)\s*\(", text):
        line = text.count("\n", 0, m.start()) + 1
        target = m.group(1)
        open_at = m.end() - 1
        close_at = matching(text, open_at, "(", ")")
        args = [type_annotation(a) for a in split_top(text[open_at + 1:close_at - 1])]
        ret = None
        rest = text[close_at:]
        stripped = rest.lstrip()
        if stripped.startswith("::"):
            ret_text = stripped[2:].lstrip()
            name = re.match(r"[\w.]*", ret_text).group(0)
            if ret_text[len(name):len(name) + 1] == "{":
                end = matching(ret_text, len(name), "{", "}")
                ret = "".join(ret_text[:end].split())
            else:
                ret = name or None
        lib, _, func = target.rpartition(".")
        yield line, lib, func, args, ret


def julia_structs(text):
    """Yields (line, name, [(field, type)]) for each `struct` (mutable or not)."""
    for m in re.finditer(r"^\s*(?:mutable\s+)?struct\s+(\w+)(.*?)\bend\b", text,
                         flags=re.M | re.S):
        name, body = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        fields = []
        for raw in body.splitlines():
            raw = raw.strip()
            fm = re.match(r"^(\w+)::(.+)$", raw)
            if fm:
                fields.append((fm.group(1), "".join(fm.group(2).split())))
        yield line, name, fields


def check(header_path, src, library):
    """Returns (problems, summary lines) for the Julia sources under src."""
    header = Header(header_path.read_text())
    if not header.functions:
        raise SystemExit(f"check-julia: no functions parsed from {header_path}")
    problems = []
    bound = set()
    n_calls = 0
    n_structs = 0
    sources = sorted(pathlib.Path(src).rglob("*.jl"))
    if not sources:
        raise SystemExit(f"check-julia: no .jl files under {src}")
    for path in sources:
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        text = strip_julia_comments(path.read_text())
        parsed = list(julia_ccalls(path, text))
        if len(parsed) != text.count("@ccall"):
            problems.append(f"{rel}: {text.count('@ccall')} @ccall uses but only {len(parsed)} "
                            f"in a form this checker parses")
        for line, lib, func, args, ret in parsed:
            n_calls += 1
            where = f"{rel}:{line}: {func}"
            if lib != library:
                problems.append(f"{where}: library is `{lib}`, expected `{library}`")
            if func not in header.functions:
                problems.append(f"{where}: not declared in {header_path.name}")
                continue
            bound.add(func)
            c_ret, c_params = header.functions[func]
            if len(args) != len(c_params):
                problems.append(f"{where}: {len(args)} arguments, the C prototype has "
                                f"{len(c_params)}")
            for i, ((expr, jtype), ctype) in enumerate(zip(args, c_params), start=1):
                if jtype is None:
                    problems.append(f"{where}: argument {i} `{expr}` has no ::Type")
                    continue
                ok = julia_types_for(ctype, header, "arg")
                if jtype not in ok:
                    problems.append(f"{where}: argument {i} `{expr}` is {jtype}, C type "
                                    f"`{ctype}` needs one of {', '.join(ok)}")
            ok = julia_types_for(c_ret, header, "ret")
            if ret not in ok:
                problems.append(f"{where}: returns {ret}, C type `{c_ret}` needs one of "
                                f"{', '.join(ok)}")
        for line, name, fields in julia_structs(text):
            where = f"{rel}:{line}: struct {name}"
            if name in header.opaque:
                n_structs += 1
                if fields:
                    problems.append(f"{where}: opaque in C, must have no fields in Julia")
            elif name in header.structs:
                n_structs += 1
                c_fields = header.structs[name]
                if [f for f, _ in fields] != [f for f, _ in c_fields]:
                    problems.append(f"{where}: fields {[f for f, _ in fields]} differ from C "
                                    f"{[f for f, _ in c_fields]}")
                    continue
                for (fname, jtype), (_, ctype) in zip(fields, c_fields):
                    ok = julia_types_for(ctype, header, "field")
                    if jtype not in ok:
                        problems.append(f"{where}: field {fname} is {jtype}, C type `{ctype}` "
                                        f"needs one of {', '.join(ok)}")
    summary = [f"check-julia: {n_calls} @ccall sites ({len(bound)} distinct functions) and "
               f"{n_structs} mirrored C types checked against {header_path}: "
               f"{'OK' if not problems else f'{len(problems)} problem(s)'}"]
    unbound = sorted(set(header.functions) - bound)
    return problems, summary, unbound


# Known mistakes, each planted alone in a copy of the sources: (file, original, mutated,
# text the report must contain).
MUTATIONS = [
    ("noise.jl", "sigma_units::Cdouble,\n                                                        out::Ptr{Int64}",
     "sigma_units::Cfloat,\n                                                        out::Ptr{Int64}",
     "argument 2 `sigma_units` is Cfloat"),
    ("noise.jl", "out::Ptr{Int64}, n::Csize_t)::Cint)\n    return out\nend\n\n\"\"\"`n` exact discrete Laplace",
     "out::Ptr{UInt64}, n::Csize_t)::Cint)\n    return out\nend\n\n\"\"\"`n` exact discrete Laplace",
     "is Ptr{UInt64}"),
    ("noise.jl", "UInt64(insecure_seed)::UInt64", "Int(insecure_seed)::Int64",
     "is Int64, C type `uint64_t`"),
    ("noise.jl", "n_clients::Csize_t,\n", "n_clients::Cint,\n", "is Cint, C type `size_t`"),
    ("noise.jl", "dpd_laplace_scale(epsilon::Cdouble, l1_sensitivity::Cdouble,",
     "dpd_laplace_scale(epsilon::Cdouble,", "2 arguments, the C prototype has 3"),
    ("noise.jl", "dpd_accountant_charge_pure(", "dpd_accountant_charge_purely(",
     "dpd_accountant_charge_purely: not declared"),
    ("noise.jl", "out::Ref{Ptr{dpd_accountant}})::Cint)", "out::Ref{dpd_accountant})::Cint)",
     "is Ref{dpd_accountant}"),
    ("capi.jl", "dpd_version()::Cstring", "dpd_version()::Cint", "returns Cint"),
    ("capi.jl", "    frac_bits::UInt32\n    noise_sigma_total", "    frac_bits::UInt64\n    noise_sigma_total",
     "field frac_bits is UInt64"),
    ("capi.jl", "    shard::UInt64\n    dim::UInt64", "    dim::UInt64\n    shard::UInt64",
     "differ from C"),
    ("capi.jl", "struct dpd_rng end", "struct dpd_rng\n    x::Int\nend", "opaque in C"),
    ("dca.jl", "length(bytes)::Csize_t)::Cint)\n    return node\nend\n\n\"\"\"Takes back",
     "length(bytes))::Cint)\n    return node\nend\n\n\"\"\"Takes back", "has no ::Type"),
    ("dca.jl", "@ccall libdpdist.dpd_node_free", "@ccall libdpdistx.dpd_node_free",
     "library is `libdpdistx`"),
    ("dca.jl", "bound::Cdouble, share_mode(mode)::UInt32", "bound::Cdouble, share_mode(mode)::Cint",
     "is Cint, C type `uint32_t`"),
    ("plr.jl", "            ds::Ptr{dpd_dataset}, epsilon::Cdouble, lambda::Cdouble,",
     "            ds::Ptr{dpd_dataset}, epsilon::Float32, lambda::Cdouble,",
     "argument 2 `epsilon` is Float32"),
    ("plr.jl", "    check(@ccall libdpdist.dpd_auc(", "    check(@ccall  libdpdist . dpd_auc(",
     "in a form this checker parses"),
]


def self_test(header_path, src):
    problems, _, _ = check(header_path, src, "libdpdist")
    if problems:
        print("check-julia self-test: the unmodified sources already have problems:")
        for p in problems:
            print("  " + p)
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for file, old, new, expect in MUTATIONS:
            copy = pathlib.Path(tmp) / "src"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(src, copy)
            target = copy / file
            text = target.read_text()
            if text.count(old) < 1:
                print(f"self-test: mutation anchor not found in {file}: {old[:60]!r}")
                failures += 1
                continue
            target.write_text(text.replace(old, new, 1))
            found, _, _ = check(header_path, copy, "libdpdist")
            if any(expect in p for p in found):
                print(f"caught  {file}: {expect}")
            else:
                print(f"MISSED  {file}: {expect} (report: {found})")
                failures += 1
    print(f"check-julia self-test: {len(MUTATIONS) - failures} of {len(MUTATIONS)} planted "
          f"mistakes caught")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--header", default=str(ROOT / "include" / "dpdist.h"))
    ap.add_argument("--src", default=str(ROOT / "ffi" / "julia" / "DpDist" / "src"))
    ap.add_argument("--library", default="libdpdist",
                    help="the Julia constant every @ccall must name")
    ap.add_argument("--self-test", action="store_true",
                    help="plant known mistakes in a copy of the sources; all must be caught")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()

    header_path = pathlib.Path(opts.header)
    if not header_path.is_file():
        print(f"check-julia: header not found: {header_path}", file=sys.stderr)
        return 2
    if opts.self_test:
        return self_test(header_path, pathlib.Path(opts.src))
    problems, summary, unbound = check(header_path, opts.src, opts.library)
    for p in problems:
        print(p)
    for line in summary:
        print(line)
    if unbound:
        print(f"check-julia: {len(unbound)} header functions have no Julia binding"
              + (": " + ", ".join(unbound) if opts.verbose else " (-v lists them)"))
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())

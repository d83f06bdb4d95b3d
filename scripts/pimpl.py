#!/usr/bin/env python3
"""Moves a class's private data members out of its public header into `struct Class::Impl` in its
source file, behind `std::unique_ptr<Impl> impl_` (issue 58: a narrow public surface).

  scripts/pimpl.py include/baton/exec/cmaes.h CmaEsStrategy src/exec/cmaes.cpp

What it does, mechanically: the private data members (as ../shared/tools/private_members.py counts
them) and the comment lines just above each go into the Impl; the member functions defined in the
source use `impl_->name_`; a constructor's initialisers of moved members become assignments in its
body; one-line inline functions of the header that read a moved member move to the source. The
class gets an out-of-line destructor (and a constructor when it had none: the implicit one would
leave impl_ empty). What it cannot do (a multi-line inline function, a copy of the class, a
delegating constructor, `other.member_` of another object) the compiler says; finish those by hand.
"""
import re
import sys

DECL = re.compile(r"^\s*(?:mutable\s+|static\s+|const\s+|inline\s+)*[\w:<>,\s\*&\[\]]+?\s+[\*&]?(\w+)\s*"
                  r"(?:\[[^\]]*\])?\s*(?:=[^;]*|\{[^;]*\})?;\s*(//.*)?$")
MULTI = re.compile(r"^\s*([\w:<>,\s\*&]+?)\s+(\w+_\s*(?:=\s*[^,;]+)?(?:\s*,\s*\w+_\s*(?:=\s*[^,;]+)?)+);\s*(//.*)?$")


def class_span(lines, name):
    for i, line in enumerate(lines):
        if re.match(r"^\s*class\s+" + name + r"\b[^;]*$", line):
            depth = 0
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0 and "}" in lines[j]:
                    return i, j
    sys.exit(f"no class {name}")


def members(lines, start, end):
    """(line indexes to remove, declarations, member names)"""
    access, remove, decls, names = "private", [], [], []
    depth = 0
    for i in range(start + 1, end):
        s = lines[i].strip()
        if depth == 0 and re.match(r"^(private|protected)\s*:", s):
            access = "private"
        elif depth == 0 and re.match(r"^public\s*:", s):
            access = "public"
        elif depth == 0 and access == "private" and not s.startswith(("using", "friend", "typedef", "enum", "static", "struct", "//")):
            m = MULTI.match(lines[i])
            code = s.split("//")[0]
            single = "(" not in code.split("=")[0] and DECL.match(lines[i])
            if m or single:
                k = i
                while k - 1 > start and lines[k - 1].strip().startswith("//") and k - 1 not in remove:
                    k -= 1
                for r in range(k, i + 1):
                    remove.append(r)
                    decls.append(lines[r])
                if m:
                    names += re.findall(r"(\w+_)\s*(?:=\s*[^,;]+)?(?:,|$)", m.group(2))
                else:
                    names.append(single.group(1))
        depth += lines[i].count("{") - lines[i].count("}")
    return remove, decls, names


def main():
    header, cls, source = sys.argv[1:4]
    h = open(header).read().split("\n")
    start, end = class_span(h, cls)
    remove, decls, names = members(h, start, end)
    define_default = False
    if not names:
        sys.exit("no private data members")
    if "impl_" in names:
        sys.exit(f"{cls} has an implementation pointer already: move the members into its Impl by hand")
    name_re = re.compile(r"(?<![\w>.])(" + "|".join(map(re.escape, names)) + r")\b")
    moved_inline = []
    out = []
    # "override" on the destructor only where the class overrides something (a base such as
    # enable_shared_from_this has no virtual destructor)
    polymorphic = any("override" in h[i] for i in range(start, end))
    has_dtor = any(re.search(r"~" + cls + r"\s*\(", h[i]) for i in range(start, end))
    # a class without a constructor gets one: the implicit one would leave impl_ empty
    defaulted = re.compile(r"^(\s*)(explicit\s+)?" + cls + r"\(\)\s*=\s*default;")
    for i in range(start, end):  # a defaulted default constructor would leave impl_ empty
        if defaulted.match(h[i]):
            h[i] = defaulted.sub(r"\1" + cls + "();", h[i])
            define_default = True
    has_ctor = any(re.search(r"(?<![~\w])" + cls + r"\s*\((?!\s*(const\s+)?" + cls + r"\s*&)", h[i])
                   for i in range(start, end))
    for i, line in enumerate(h):
        if start < i < end and i in remove:
            if i == remove[0]:
                out.append("  struct Impl;")
                out.append("  std::unique_ptr<Impl> impl_;")
            continue
        if start < i < end:
            m = re.match(r"^(\s*)(.*?)\s*\{(.*)\}\s*(//.*)?$", line)
            if m and "(" in m.group(2) and name_re.search(m.group(3)):
                sig = m.group(2)
                out.append(m.group(1) + sig + ";" + ("  " + m.group(4) if m.group(4) else ""))
                moved_inline.append((sig, m.group(3)))
                continue
        out.append(line)
        if i == start and not has_dtor:
            pass
    if not has_dtor:
        # after the first "public:" of the class
        for k in range(start, len(out)):
            if re.match(r"^\s*public\s*:", out[k]):
                out.insert(k + 1, f"  ~{cls}()" + (" override" if polymorphic else "") + ";")
                if not has_ctor:
                    out.insert(k + 1, f"  {cls}();")
                break
    text = "\n".join(out)
    if "#include <memory>" not in text:
        text = re.sub(r"(#include <[^>]+>\n)(?!#include <)", r"\1#include <memory>\n", text, count=1)
    open(header, "w").write(text)

    s = open(source).read()
    impl = f"struct {cls}::Impl {{\n" + "\n".join(decls) + "\n};\n\n"
    if define_default:
        impl += f"{cls}::{cls}() : impl_(std::make_unique<Impl>()) {{}}\n"
    if not has_dtor:
        if not has_ctor:
            impl += f"{cls}::{cls}() : impl_(std::make_unique<Impl>()) {{}}\n"
        impl += f"{cls}::~{cls}() = default;\n\n"
    for sig, body in moved_inline:
        sig = re.sub(r"^(?:static\s+|inline\s+|virtual\s+)", "", sig)
        m = re.match(r"^(.*?)(\b\w+\s*\(.*)$", sig)
        ret, rest = (m.group(1), m.group(2)) if m else ("", sig)
        rest = rest.replace(" override", "")
        new_body = name_re.sub(r"impl_->\1", body)
        impl += f"{ret}{cls}::{rest} {{{new_body}}}\n"
    # the first member function outside an anonymous namespace (a nested type must be defined in
    # a namespace that encloses the class)
    first = None
    for m in re.finditer(r"^[^\n]*\b" + cls + r"::", s, re.M):
        if not anonymous_open(s[:m.start()]):
            first = m
            break
    if not first:
        sys.exit("no member function of " + cls + " in " + source)
    s = s[:first.start()] + impl + "\n" + s[first.start():]
    # member function bodies: from "Class::name(" to the matching closing brace
    pos = 0
    result = []
    pat = re.compile(r"\b" + cls + r"::(~?\w+)\s*\(")
    while True:
        m = pat.search(s, pos)
        if not m:
            result.append(s[pos:])
            break
        if s[m.start() - 7:m.start()] == "struct " or m.group(1) == "Impl":
            result.append(s[pos:m.end()])
            pos = m.end()
            continue
        brace = s.find("{", m.end())
        semi = s.find(";", m.end())
        if brace < 0 or (0 <= semi < brace and "=" in s[m.end():semi]):
            result.append(s[pos:m.end()])
            pos = m.end()
            continue
        depth, k = 0, brace
        while True:
            if s[k] == "{":
                depth += 1
            elif s[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        head, body = s[m.start():brace], s[brace:k + 1]
        assigns = []
        if m.group(1) == cls and ":" in head[len(cls) + 2:]:
            # constructor initialisers of moved members become assignments in the body
            sig_end = head.index(")", head.index("(")) if False else None
            parts = split_initialisers(head)
            if parts is not None:
                prefix, inits = parts
                kept = []
                for init in inits:
                    im = re.match(r"^\s*(\w+)\s*([\(\{])(.*)([\)\}])\s*$", init, re.S)
                    if im and im.group(1) in names:
                        arg = im.group(3)
                        assigns.append(f"  impl_->{im.group(1)} = {arg.strip()};")
                    else:
                        kept.append(init.strip())
                if not any(x.startswith("impl_(") for x in kept):
                    kept.insert(len([x for x in kept if not re.match(r"^\w+_\s*[\(\{]", x)]), "impl_(std::make_unique<Impl>())")
                head = prefix + " : " + ", ".join(kept) + " "
        body = name_re.sub(r"impl_->\1", body)
        if m.group(1) == cls:
            if "impl_(" not in head:
                head = head.rstrip() + (" : " if ")" == head.rstrip()[-1] else ", ") + "impl_(std::make_unique<Impl>()) "
            if assigns:
                body = "{\n" + "\n".join(assigns) + body[1:]
        result.append(s[pos:m.start()] + head + body)
        pos = k + 1
    s = "".join(result)
    if "#include <memory>" not in s:
        s = re.sub(r"(#include <[^>]+>\n)(?!#include <)", r"\1#include <memory>\n", s, count=1)
    open(source, "w").write(s)
    print(f"{cls}: {len(names)} members moved: {', '.join(names)}")


def anonymous_open(text):
    """Whether `text` ends inside an anonymous namespace ("namespace {" ... "}  // namespace")."""
    depth = 0
    for line in text.split("\n"):
        if re.match(r"^namespace \{", line):
            depth += 1
        elif re.match(r"^\}  // namespace$", line) and depth > 0:
            depth -= 1
    return depth > 0


def split_initialisers(head):
    """'Class::Class(args) : a(x), b{y} ' -> ('Class::Class(args)', ['a(x)', 'b{y}'])"""
    depth = 0
    for i, c in enumerate(head):
        if c in "(<":
            depth += 1
        elif c in ")>":
            depth -= 1
            if depth == 0 and c == ")":
                rest = head[i + 1:]
                if ":" not in rest:
                    return None
                colon = rest.index(":")
                prefix, inits = head[:i + 1 + colon].rstrip(), rest[colon + 1:]
                out, depth2, cur = [], 0, ""
                for ch in inits:
                    if ch in "({<[":
                        depth2 += 1
                    elif ch in ")}>]":
                        depth2 -= 1
                    if ch == "," and depth2 == 0:
                        out.append(cur)
                        cur = ""
                    else:
                        cur += ch
                if cur.strip():
                    out.append(cur)
                return prefix.rstrip().rstrip(":").rstrip(), out
    return None


if __name__ == "__main__":
    main()

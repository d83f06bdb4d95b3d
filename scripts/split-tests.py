#!/usr/bin/env python3
"""Splits a GoogleTest file into one file per source it tests (tests/<module>/<name>_test.cpp).

  scripts/split-tests.py tests/metrics/metrics_test.cpp Auroc=auroc ClassScores=classification \
      Metrics.Registry=registry ...

A key is a suite (`Auroc`) or a suite and the start of a test's name (`Plan.Workspace`); the longest
key that matches a test wins, and a test no key matches stays in the file. The code between two tests
goes with the test after it. The helpers before the first test go to the one file that uses them;
those several files use are written to <stem>_fixtures.h (namespace baton::<stem>_fixtures, functions
inline) for a person to check. The original file is rewritten with what is left, or removed.
"""
import re
import sys
from pathlib import Path

TEST_RE = re.compile(r"^TEST(?:_F|_P)?\((\w+),\s*(\w+)\)")


def items_of(lines, start, stop):
    """The top-level items between `start` and `stop`: (kind, name, lines), kind "test" or "helper",
    each with the comments above it; a test's name is its target key "Suite.Name"."""
    items, current, inside = [], [], False  # clang-format closes a top-level block in column 0
    for i in range(start, stop):
        line = lines[i]
        current.append(line)
        if not line.strip() or line.strip().startswith("//"):
            continue
        code_line = re.sub(r'\s*//[^"]*$', '', line.rstrip())  # a comment after the code
        if not inside and code_line.endswith("{"):
            inside = True
        if inside and not line.startswith("}"):
            continue
        if not inside and not code_line.endswith((";", "}")):
            continue
        inside = False
        code = "".join(x for x in current if x.strip() and not x.strip().startswith("//"))
        test = TEST_RE.match(code)
        if test:
            items.append(("test", f"{test.group(1)}.{test.group(2)}", current))
        else:
            m = re.search(r"(?:struct|class|using)\s+(\w+)", code) or re.search(r"(\w+)\s*(?:\(|=|\{|;)", code)
            items.append(("helper", m.group(1) if m else "", current))
        current = []
    if "".join(current).strip():
        items.append(("helper", "", current))
    return items


REOPEN_RE = re.compile(
    r"}  // namespace\n}  // namespace baton\n\n((?:#include [^\n]+\n)*)\n*namespace baton {\nnamespace {\n\n?((?:using [^\n]+\n)*)\n*"
)


def normalized(text):
    """The text with the namespaces closed and opened again mid-file removed: their includes and using
    lines go to the head."""
    while True:
        m = next((m for m in REOPEN_RE.finditer(text) if text[m.end():].strip()), None)
        if not m:
            return text
        text = text[: m.start()] + text[m.end():]
        for line in (m.group(1) + m.group(2)).splitlines(keepends=True):
            if line in text:
                continue
            if line.startswith("#include"):
                at = text.index("\n", text.rindex("#include", 0, text.index("namespace baton {"))) + 1
            else:
                at = text.index("\n", text.index("namespace {\n")) + 1
            text = text[:at] + line + text[at:]


def main():
    path = Path(sys.argv[1]).resolve()
    keys = dict(arg.split("=", 1) for arg in sys.argv[2:])
    lines = normalized(path.read_text()).splitlines(keepends=True)
    closing_start = max(i for i, line in enumerate(lines) if line.startswith("}"))
    while closing_start > 0 and re.match(r"^}\s*//\s*namespace", lines[closing_start - 1]):
        closing_start -= 1
    if not re.match(r"^}\s*//\s*namespace", lines[closing_start]):
        raise SystemExit(f"{path}: expected '}}  // namespace' at the end")
    closing = lines[closing_start:]
    # The head: includes, namespace openings and using lines, up to the first other line.
    head_end = 0
    for i, line in enumerate(lines[:closing_start]):
        if line.startswith(("#", "namespace ", "using ")):
            head_end = i + 1
        elif line.strip() and not line.startswith("//"):
            break
    while head_end < closing_start and not lines[head_end].strip():
        head_end += 1
    head = lines[:head_end]
    items = items_of(lines, head_end, closing_start)

    def target_of(full):
        suite = full.split(".")[0]
        match = max((k for k in keys if k == suite or "." in k and full.startswith(k)), key=len, default=None)
        return keys[match] if match else None

    owners = [{target_of(name)} if kind == "test" else set() for kind, name, _ in items]
    for i in reversed(range(len(items))):  # a helper serves the files whose tests or helpers use it
        kind, name, block = items[i]
        if kind == "helper" and name:
            for j in range(i + 1, len(items)):
                if re.search(rf"\b{name}\b", "".join(items[j][2])):
                    owners[i] |= owners[j]
        if kind == "helper" and not owners[i]:
            owners[i] = {None}
    stem = path.stem.removesuffix("_test")
    chunks, fixtures, fixture_names = {}, [], []
    for (kind, name, block), owner in zip(items, owners):
        if len(owner) == 1:
            chunks.setdefault(next(iter(owner)), []).extend(block)
            continue
        code = next(i for i, x in enumerate(block) if x.strip() and not x.strip().startswith("//"))
        if not re.match(r"\s*(struct|class|using|constexpr|template|inline|enum)\b", block[code]):
            block = block[:code] + ["inline " + block[code]] + block[code + 1 :]
        fixtures.extend(block)
        fixture_names.append(name)
        print(f"{name}: used by {', '.join(sorted(str(u) for u in owner))} -> {stem}_fixtures.h")
    head_text = fixture_head = "".join(head)
    if fixtures:
        fixture_path = path.with_name(f"{stem}_fixtures.h")
        includes = "".join(x for x in head if x.startswith("#include") or not x.strip()).strip("\n") + "\n"
        includes = re.sub(r"\n{3,}", "\n\n", includes)
        usings = "".join(x for x in head if x.startswith("using ") or re.match(r"namespace \w+ = ", x))
        fixture_path.write_text(
            f"// The helpers the tests of {path.parent.name}/ share.\n#pragma once\n\n" + includes
            + f"\nnamespace baton::{stem}_fixtures {{\n\n" + usings + "\n" + "".join(fixtures).strip("\n")
            + f"\n\n}}  // namespace baton::{stem}_fixtures\n"
        )
        last = head_text.rindex('#include "')
        last = head_text.index("\n", last) + 1
        fixture_head = head_text[:last] + f'#include "{path.parent.name}/{stem}_fixtures.h"\n' + head_text[last:]
        fixture_head = fixture_head.replace(
            "namespace {\n", f"namespace {{\n\nusing namespace {stem}_fixtures;  // NOLINT(google-build-using-namespace)\n", 1
        )
    if None in chunks and not any(TEST_RE.match(x) for x in chunks[None]):
        if "".join(chunks[None]).strip():
            print(f"{path.name}: left without tests:\n" + "".join(chunks[None]))
        del chunks[None]
    for target, chunk in chunks.items():
        out = path if target is None else path.with_name(f"{target}_test.cpp")
        body = "".join(chunk).strip("\n")
        uses = any(name and re.search(rf"\b{name}\b", body) for name in fixture_names)
        this_head = fixture_head if uses else head_text
        if out.exists() and out != path:  # merge: the includes and using lines it lacks, the tests at its end
            old = out.read_text()
            end = old.rindex("}  // namespace\n")
            new_lines = [x for x in this_head.splitlines(keepends=True) if x.startswith(("#include", "using "))]
            for x in new_lines:
                if x in old:
                    continue
                anchor = "#include" if x.startswith("#include") else "namespace {\n"
                at = old.rindex(anchor) if anchor == "#include" else old.index(anchor)
                at = old.index("\n", at) + 1
                old, end = old[:at] + x + old[at:], end + len(x)
            out.write_text(old[:end].rstrip("\n") + "\n\n" + body + "\n\n" + old[end:])
            print(f"{out.name}: {sum(1 for x in chunk if TEST_RE.match(x))} tests added")
            continue
        out.write_text(this_head.rstrip("\n") + "\n\n" + body + "\n\n" + "".join(closing))
        print(f"{out.name}: {sum(1 for x in chunk if TEST_RE.match(x))} tests")
    if None not in chunks:
        path.unlink()
        print(f"{path.name}: removed")


if __name__ == "__main__":
    main()

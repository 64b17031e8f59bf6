#!/usr/bin/env python3
"""Fails when an include breaks the table of allowed dependencies, or when files include each other
in a cycle.

The table is the one docs/ARCHITECTURE.md gives under "## Allowed dependencies": one row per folder
(src/ folders by their path below src/, such as `analysis/causal/`; the drivers by their path from
the root, such as `tests/*`), naming the folders its files may include. `x/` names folder x alone,
`x/*` names x and every folder below it, `*` every folder of src/. A folder may always include its
own headers. A folder with no row fails, so a new folder is placed on purpose.

File cycles: a header and its .cpp are one unit; a unit that includes, through any chain, a unit
that includes it back is a cycle (the seam and its importers, a model and its builder), reported
once per cycle.

Usage: check_layers.py ROOT          checks the tree at ROOT (the repository root);
       check_layers.py --probe ROOT  checks that planted offences (a sibling include, an include of
                                     a later stage, a file cycle) fail the check.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")
DRIVERS = ("include", "tests", "fuzz", "bench")


def read_table(architecture_md):
    rows, inside = {}, False
    with open(architecture_md, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                inside = line.strip() == "## Allowed dependencies"
                continue
            m = ROW.match(line) if inside else None
            if m:
                rows[m.group(1).rstrip("/")] = re.findall(r"`([^`]+)`", m.group(2))
    if not rows:
        sys.exit(f"{architecture_md}: no '## Allowed dependencies' table (| `folder/` | `dep/` ... |)")
    return rows


def matches(pattern, folder):
    pattern = pattern.rstrip("/")
    if pattern == "*":
        return True
    if pattern.endswith("/*"):
        base = pattern[:-2]
        return folder == base or folder.startswith(base + "/")
    return folder == pattern


def row_for(rows, folder):
    """The table row of a folder: its own, else the nearest `x/*` row above it."""
    if folder in rows:
        return rows[folder]
    parts = folder.split("/")
    for n in range(len(parts), 0, -1):
        star = "/".join(parts[:n]) + "/*"
        if star in rows:
            return rows[star]
    return None


def scan(root):
    """(file path from root, folder key, [(line, include)]) for every source file."""
    files = []
    for top in ("src",) + DRIVERS:
        for dirpath, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            if os.path.relpath(dirpath, root).startswith(("tests/data", "tests/tools")):
                continue
            for name in sorted(names):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                folder = os.path.relpath(dirpath, os.path.join(root, "src")) if top == "src" else os.path.dirname(rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                incs = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)]
                files.append((rel, folder, incs))
    return files


def check(root, files, rows):
    src = os.path.join(root, "src")
    problems = []
    for rel, folder, incs in files:
        row = row_for(rows, folder)
        if row is None:
            problems.append(f"{rel}: folder {folder}/ has no row in the table of allowed dependencies")
            continue
        for line, inc in incs:
            target = os.path.dirname(inc)
            if not target or not os.path.isfile(os.path.join(src, inc)):
                continue  # a system, generated or test-local header
            if target == folder or any(matches(p, target) for p in row):
                continue
            problems.append(f"{rel}:{line}: {folder}/ includes {inc}, and {target}/ is not in its row")
    return problems


def cycles(files):
    """Cycles between units (src path without extension), each named once."""
    graph = {}
    for rel, _, incs in files:
        if not rel.startswith("src/"):
            continue
        unit = os.path.splitext(rel[4:])[0]
        graph.setdefault(unit, set())
        for _, inc in incs:
            other = os.path.splitext(inc)[0]
            if other != unit:
                graph[unit].add(other)
    for unit in graph:
        graph[unit] &= graph.keys()
    # Tarjan's strongly connected components, iterative.
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = counter[0]
                counter[0] += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
    return [f"file cycle: {' <-> '.join(c)} include each other (a header and its .cpp count as one)" for c in out]


def run(root, extra_files=()):
    rows = read_table(os.path.join(root, "docs", "ARCHITECTURE.md"))
    files = scan(root) + list(extra_files)
    return check(root, files, rows) + cycles(files), len(files)


def probe(root):
    planted = [
        ("src/diff/probe.cpp", "diff", [(1, "job/wire.h")]),  # siblings may not include each other
        ("src/analysis/probe.cpp", "analysis", [(2, "report/format.h")]),  # a later stage
        ("src/ingest/nccl/probe.cpp", "ingest/nccl", [(3, "ingest/smi/smi_log_parser.h")]),  # another evidence kind
        ("src/model/probe_a.h", "model", [(1, "model/probe_b.h")]),  # a file cycle
        ("src/model/probe_b.cpp", "model", [(1, "model/probe_a.h")]),
    ]
    for rel, _, incs in planted[:3]:
        assert os.path.isfile(os.path.join(root, "src", incs[0][1])), incs[0][1]
    problems, _ = run(root, planted)
    expected = ["src/diff/probe.cpp:1:", "src/analysis/probe.cpp:2:", "src/ingest/nccl/probe.cpp:3:",
                "file cycle: model/probe_a <-> model/probe_b"]
    missed = [e for e in expected if not any(p.startswith(e) for p in problems)]
    if missed:
        sys.exit(f"planted offences not caught: {missed}")
    print(f"probe: all {len(expected)} planted offences fail the check")
    return 0


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--probe":
        return probe(sys.argv[2])
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems, count = run(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) against docs/ARCHITECTURE.md's allowed dependencies")
        return 1
    print(f"allowed dependencies hold, no file cycle: {count} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Fails when a source file includes a header from a later stage than its own.

The stage order is the one docs/ARCHITECTURE.md states on its line starting "Stage order:"
(folders of src/ separated by "<"); a folder may include itself and any folder before it.
Usage: check_layers.py SOURCE_ROOT (the repository root). Prints every offending include.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def stage_order(architecture_md):
    with open(architecture_md, encoding="utf-8") as f:
        for line in f:
            if line.startswith("Stage order:"):
                names = re.findall(r"`([a-z_]+)/`", line)
                if names:
                    return names
    sys.exit(f"{architecture_md}: no 'Stage order:' line naming the folders as `name/` < `name/`")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    order = stage_order(os.path.join(root, "docs", "ARCHITECTURE.md"))
    rank = {name: i for i, name in enumerate(order)}
    src = os.path.join(root, "src")
    problems = []
    for folder in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, folder)):
            continue
        if folder not in rank:
            problems.append(f"src/{folder}/: not in the stage order of docs/ARCHITECTURE.md")
            continue
        for dirpath, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    if target in rank and rank[target] > rank[folder]:
                        line = text.count("\n", 0, m.start()) + 1
                        problems.append(f"{os.path.relpath(path, root)}:{line}: {folder}/ includes {target}/, "
                                        f"a later stage")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the stage order: " + " < ".join(order))
        return 1
    print("stage order holds: " + " < ".join(order))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs two ferret binaries on the same inputs and reports every command whose output differs.

A change that should not change what ferret prints (a refactor, a split, a move) shows it here:
build the commit before the change beside the one after, then

    python3 tests/tools/compare_outputs.py OLD/ferret NEW/ferret [ROOT...]

Each ROOT (a file or a folder, searched recursively; by default the repository's examples/ and
tests/data/) is read by the commands that take its kind of evidence: trace files by
`analyze` (text, --json, --md), `info` (text, --json) and `whatif --json` (two causes removed); NCCL logs by `nccl`
(text, --json); GPU utilisation logs by `smi` (text, --json); allocator snapshots and memory text by
`memory` (text, --json). stdout, stderr and the exit status are compared byte for byte.
Prints one line per difference and a summary; exits 1 when anything differs.
"""
import os
import subprocess
import sys

TRACE_SUFFIXES = (".json", ".json.gz", ".json.zst", ".pt.trace.json", ".pt.trace.json.gz")
COMMANDS = {
    "trace": [["analyze"], ["analyze", "--json"], ["analyze", "--md"], ["info"], ["info", "--json"],
              ["whatif", "--json", "--remove", "host-sync", "--remove", "dataloader"]],
    "nccl": [["nccl"], ["nccl", "--json"]],
    "smi": [["smi"], ["smi", "--json"]],
    "memory": [["memory"], ["memory", "--json"]],
}


def kind_of(path):
    """The evidence kind a file holds, by its folder and name; None for files no command reads."""
    parts = path.replace(os.sep, "/")
    name = os.path.basename(path)
    if "/nccl/" in parts and name.endswith((".log", ".txt", ".log.gz")):
        return "nccl"
    if "/smi/" in parts and name.endswith((".csv", ".log", ".txt", ".prom", ".csv.gz")):
        return "smi"
    if "/memory/" in parts and name.endswith((".pickle", ".txt", ".log")):
        return "memory"
    if name.endswith(TRACE_SUFFIXES) and "/fuzz/" not in parts and "reference-" not in parts:
        return "trace"
    return None


def inputs(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for dirpath, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                yield os.path.join(dirpath, name)


def run(binary, args, path):
    try:
        done = subprocess.run([binary, *args, path], capture_output=True, timeout=600)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    roots = sys.argv[3:] or [os.path.join(root, "examples"), os.path.join(root, "tests", "data")]
    runs = differences = 0
    for path in inputs(roots):
        kind = kind_of(path)
        if kind is None:
            continue
        for args in COMMANDS[kind]:
            runs += 1
            a, b = run(old, args, path), run(new, args, path)
            if a != b:
                differences += 1
                what = [w for w, x, y in zip(("exit status", "stdout", "stderr"), a, b) if x != y]
                print(f"differs: ferret {' '.join(args)} {path}: {', '.join(what)}")
    print(f"{runs} runs, {differences} with a different output")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())

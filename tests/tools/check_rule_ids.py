#!/usr/bin/env python3
"""Fails when a rule is known outside the rule registry and its own file.

The registry is the one place that knows every rule: which rules explain which, what the what-if
removes for each, which wait on the host. Its rows live in the rule files (`RuleInfo{"id", ...}`
beside the rule that emits the id), gathered by src/diagnosis/rule_registry.{h,cpp}, whose header
names the symptoms causes explain. A rule's own file holds its row and emits its id. Anywhere else,
a rule id in a string literal is a second home for that knowledge - a comparison that drifts when
the registry changes - and `detail.find(` in diagnosis/ is one rule parsing another's prose. Both fail, except the places listed in KNOWN with why; a
listed place that no longer offends fails too, so the list only shrinks.

Usage: check_rule_ids.py SOURCE_ROOT (the repository root). Prints every offending line.
       check_rule_ids.py --probe SOURCE_ROOT: checks that the check fails on a planted offence.
"""
import os
import re
import shutil
import sys
import tempfile

LITERAL = re.compile(r'"([a-z0-9]+(?:-[a-z0-9]+)+)"')
# A rule file emits its ids through the registry's constructor: finding_for("id") (either id of a
# `cond ? "a" : "b"`), or by assigning one.
EMITS = re.compile(r'finding_for\(([^;]*?)\);|\bid\s*=\s*"([a-z0-9-]+)"')
# A row: the id opens a RuleInfo (clang-format may break the line after the brace).
ROW = re.compile(r'RuleInfo\{\s*"([a-z0-9-]+)"')
REGISTRY = ("src/diagnosis/rule_registry.cpp", "src/diagnosis/rule_registry.h")

# (file, id): why it is still there. Each is a place to move into the registry.
KNOWN = {
    ("src/analysis/causal/whatif.cpp", "host-sync"): "`ferret whatif --remove` names, a user vocabulary that coincides",
    ("src/analysis/causal/whatif.cpp", "sync-copy"): "`ferret whatif --remove` names, a user vocabulary that coincides",
    ("src/analysis/causal/whatif.cpp", "exposed-communication"): "`ferret whatif --remove` names",
    ("src/gen/scenarios.cpp", "input-bound"): "the generator's scenario names, which name the rule they plant",
    ("src/gen/scenarios.cpp", "launch-bound"): "the generator's scenario names, which name the rule they plant",
    ("src/gen/scenarios.cpp", "communication-heavy"): "the generator's scenario names, which name the rule they plant",
    ("src/job/stragglers.cpp", "host-sync"): "a straggler cause's name in the job JSON",
}


def code_of(line):
    """The line without a // comment (string literals holding // are rare enough in this tree)."""
    at = line.find("//")
    return line if at < 0 else line[:at]


def problems_in(root, known):
    sources = []
    for folder, _, files in os.walk(os.path.join(root, "src")):
        for name in sorted(files):
            if name.endswith((".cpp", ".h")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    sources.append((os.path.relpath(path, root), f.read().splitlines()))
    owners, ids = {}, set()
    for rel, lines in sources:
        for line in lines:
            for call, assigned in EMITS.findall(code_of(line)):
                for rule in LITERAL.findall(call) + ([assigned] if assigned else []):
                    owners.setdefault(rule, set()).add(rel)
        for row in ROW.findall("\n".join(code_of(line) for line in lines)):
            owners.setdefault(row, set()).add(rel)
            ids.add(row)
    if len(ids) < 10:
        sys.exit(f"{root}/src: found only {len(ids)} rule rows (RuleInfo{{\"id\", ...}}); has the row syntax changed?")

    problems, seen = [], set()
    for rel, lines in sources:
        if rel in REGISTRY:
            continue
        for number, line in enumerate(lines, 1):
            code = code_of(line)
            if rel.startswith("src/diagnosis/") and "detail.find(" in code:
                problems.append(f"{rel}:{number}: detail.find( parses a finding's prose: {line.strip()}")
            for rule in LITERAL.findall(code):
                if rule not in ids or rel in owners.get(rule, ()):
                    continue
                if (rel, rule) in known:
                    seen.add((rel, rule))
                    continue
                problems.append(f"{rel}:{number}: rule id \"{rule}\" outside the registry and its rule's file: "
                                f"{line.strip()}")
    for place in sorted(set(known) - seen):
        problems.append(f"{place[0]}: no longer spells \"{place[1]}\": remove it from KNOWN in {__file__}")
    return ids, problems


def probe(root):
    """A tree holding the registry, the real rule files and one more rule file that compares another
    rule's id and parses a detail must fail with exactly those two problems."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(root, "src", "diagnosis"), os.path.join(tmp, "src", "diagnosis"))
        with open(os.path.join(tmp, "src", "diagnosis", "rules_probe.cpp"), "w", encoding="utf-8") as f:
            f.write('constexpr RuleInfo kRows[] = {RuleInfo{"probe-rule", S, D, R}};\n'
                    'void probe(Finding& f) {\n  f = finding_for("probe-rule");  // its own id: fine\n'
                    '  if (other.id == "input-bound") return;\n'
                    '  if (f.detail.find("would name") != std::string::npos) return;\n}\n')
        _, problems = problems_in(tmp, {})
    expected = ["rules_probe.cpp:4: rule id \"input-bound\"", "rules_probe.cpp:5: detail.find("]
    missing = [e for e in expected if not any(e in p for p in problems)]
    if missing or len(problems) != len(expected):
        sys.exit(f"the probe was not caught as planted: {problems}")
    print("probe: both planted offences fail the check")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--probe":
        probe(sys.argv[2])
        return
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    ids, problems = problems_in(root, KNOWN)
    for p in problems:
        print(p)
    if problems:
        sys.exit(f"{len(problems)} problem(s)")
    print(f"rule ids: {len(ids)} in the registry; {len(KNOWN)} known places left to move")


if __name__ == "__main__":
    main()

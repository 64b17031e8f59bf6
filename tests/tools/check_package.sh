#!/usr/bin/env bash
# The installed package works from outside the tree: install the build into a fresh prefix, build
# tests/package against it with find_package(ferret), and check that ferret::analyze_json gives
# byte for byte what the installed `ferret analyze --json` prints, for a trace and for a job
# directory; and that the step-by-step API finds the same verdict and findings as that JSON.
# Usage: check_package.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/ferret include/ferret/ferret.h lib/cmake/ferret/ferretConfig.cmake lib/cmake/ferret/ferretTargets.cmake; do
  [ -e "$work/prefix/$f" ] || { echo "check_package: $f was not installed"; exit 1; }
done
cmake -S "$src/tests/package" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
ferret="$work/prefix/bin/ferret"
"$ferret" gen job --ranks 4 --steps 3 -o "$work/job" >/dev/null
checked=0
for input in "$src/examples/traces/cpu-input-bound.json.gz" "$work/job"; do
  [ -e "$input" ] || { echo "check_package: missing test input $input"; exit 1; }
  "$ferret" analyze --json "$input" >"$work/cli.json" 2>/dev/null
  "$work/consumer/consumer" json "$input" >"$work/lib.json" 2>/dev/null
  if ! cmp -s "$work/cli.json" "$work/lib.json"; then
    echo "check_package: analyze_json differs from 'ferret analyze --json' for $input"
    diff "$work/cli.json" "$work/lib.json" | head -20
    exit 1
  fi
  checked=$((checked + 1))
done
# The step-by-step API against the CLI's JSON: the same verdict and the same findings in order.
input="$src/examples/traces/cpu-input-bound.json.gz"
"$ferret" analyze --json "$input" >"$work/cli.json"
python3 - "$work/cli.json" >"$work/expected.txt" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))["traces"][0]
print("verdict", trace["verdict"].get("finding_id", ""))
for f in trace["findings"]:
    print("finding", f["id"])
PY
"$work/consumer/consumer" verdict "$input" >"$work/actual.txt"
if ! cmp -s "$work/expected.txt" "$work/actual.txt"; then
  echo "check_package: load/analyze disagree with the CLI's JSON"
  diff "$work/expected.txt" "$work/actual.txt" | head -20
  exit 1
fi
# The Python module in PREFIX/lib/python3/dist-packages, when this build has one: imported from
# outside the tree by the interpreter it was built for, it gives the installed CLI's document.
if [ -e "$build/python/ferret/__init__.py" ]; then
  pkg="$work/prefix/lib/python3/dist-packages"
  [ -e "$pkg/ferret/_run_shim/sitecustomize.py" ] || { echo "check_package: the Python package was not installed"; exit 1; }
  (cd "$work" && PYTHONPATH="$pkg" /usr/bin/python3 - "$input" "$work/cli.json" "$pkg" <<'PY'
import json, sys
import ferret
assert ferret.__file__.startswith(sys.argv[3]), ferret.__file__
assert ferret.analyze(sys.argv[1]) == json.load(open(sys.argv[2])), "module and CLI disagree"
PY
  ) || { echo "check_package: import ferret from $pkg failed"; exit 1; }
  checked=$((checked + 1))
fi
echo "check_package: $checked inputs identical through find_package(ferret); step-by-step API agrees"

#!/usr/bin/env bash
# The Debian package installs and works from its installed files: build it with CPack (from this
# build), `apt-get install` it, run /usr/bin/ferret --version, `import ferret` with Debian's
# python3 from outside the tree, and a short `ferret run`; then remove it again. Needs root and
# apt-get (CI); anywhere else it skips with status 77.
# Usage: check_deb.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
  echo "SKIPPED: installing a .deb needs root, apt-get and dpkg-shlibdeps (CI has them)"
  exit 77
fi
if dpkg -s ferret >/dev/null 2>&1 || [ -e /usr/bin/ferret ]; then
  echo "SKIPPED: a ferret is already installed on this machine; not replacing it"
  exit 77
fi
work=$(mktemp -d)
cleanup() {
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq ferret >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/ferret_*.deb)
dpkg-deb --info "$deb" >"$work/info.txt"
grep -E "Package|Version|Depends" "$work/info.txt"
dpkg-deb --contents "$deb" >"$work/contents.txt"
for f in ./usr/bin/ferret ./usr/include/ferret/ferret.h ./usr/lib/cmake/ferret/ferretConfig.cmake \
  ./usr/lib/python3/dist-packages/ferret/__init__.py ./usr/lib/python3/dist-packages/ferret/_run_shim/sitecustomize.py; do
  grep -q " $f\$" "$work/contents.txt" || { echo "check_deb: $f is not in $deb"; exit 1; }
done
grep -q "/usr/lib/python3/dist-packages/ferret/_ferret\..*\.so" "$work/contents.txt" ||
  { echo "check_deb: the extension module is not in $deb"; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log"; exit 1; }
version=$(/usr/bin/ferret --version)
echo "installed: $version"
cd "$work"
module=$(env -u PYTHONPATH /usr/bin/python3 -c "import ferret; print(ferret.__file__, ferret.version())")
case "$module" in
  /usr/lib/python3/dist-packages/ferret/__init__.py*) ;;
  *) echo "check_deb: import ferret found $module, not the installed package"; exit 1 ;;
esac
[[ "$version" == *"${module##* }"* ]] || { echo "check_deb: module version ${module##* } is not the CLI's ($version)"; exit 1; }
env -u PYTHONPATH /usr/bin/python3 -c "import ferret, json; r = ferret.analyze('$src/examples/traces/cpu-input-bound.json.gz'); print(r.verdict)"
if env -u PYTHONPATH /usr/bin/python3 -c "import torch" 2>/dev/null; then
  env -u PYTHONPATH /usr/bin/ferret run --out "$work/run" --steps 2 -- /usr/bin/python3 "$src/tests/python/scripts/slow_dataset.py" >"$work/run.txt" 2>&1 ||
    { cat "$work/run.txt"; exit 1; }
  grep -q "Input-bound" "$work/run.txt" || { echo "check_deb: installed ferret run gave no input-bound verdict"; cat "$work/run.txt"; exit 1; }
fi
echo "check_deb: $(basename "$deb") installs; ferret --version, import ferret and ferret run work from /usr"

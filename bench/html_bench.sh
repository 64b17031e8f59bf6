#!/usr/bin/env bash
# The report side of a 1 GiB trace: `ferret analyze --html` and `ferret annotate` against the
# baseline `ferret analyze --json` of the same file (wall time, MB/s of trace, peak RSS), the
# page's size, and the time headless Chromium takes to draw it (the page records
# performance.now() when its script is done). Usage: bench/html_bench.sh [BUILD_DIR]
# FERRET_BENCH_SIZE (default 1GiB) sets the trace size; files live in bench/out/ (ignored by git).
set -euo pipefail
build=${1:-build}
size=${FERRET_BENCH_SIZE:-1GiB}
out=bench/out
mkdir -p "$out"
ferret="$build/ferret"
chromium=$(command -v chromium || command -v chromium-browser || true)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%F)"
# Two shapes of trace: few long steps of many kernels, and many steps with allocator events (the
# per-step lists are what grows with a trace's length).
for scenario in launch-bound fragmented-memory; do
  seed="$out/html-seed-$scenario.json"
  trace="$out/html-$scenario-$size.json"
  [ -f "$seed" ] || "$ferret" gen scenario "$scenario" --steps 20 -o "$seed" >/dev/null
  [ -f "$trace" ] || "$ferret" gen inflate --from "$seed" --size "$size" -o "$trace" >/dev/null
  bytes=$(stat -c %s "$trace")
  echo
  echo "== $scenario: $trace, $bytes bytes"
  measure() {  # label, then the command; prints wall s, MB/s of trace, peak RSS
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >/dev/null 2>"$out/stderr.txt" || {
      cat "$out/stderr.txt" >&2
      exit 1
    }
    read -r wall rss <"$out/time.txt"
    printf "%-28s %7.2f s  %8.1f MB/s  peak RSS %7.1f MiB\n" "$label" "$wall" \
      "$(echo "$bytes / 1000000 / $wall" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
  }
  measure "analyze --json (baseline)" "$ferret" analyze --json "$trace"
  measure "analyze --html" "$ferret" analyze --html "$out/html-$scenario.html" "$trace"
  measure "annotate -o .json.gz" "$ferret" annotate "$trace" -o "$out/html-$scenario.annotated.json.gz"
  page_bytes=$(stat -c %s "$out/html-$scenario.html")
  echo "page: $page_bytes bytes ($(echo "scale=2; $page_bytes / 1048576" | bc) MiB; limit 2 MiB)"
  echo "annotated trace: $(stat -c %s "$out/html-$scenario.annotated.json.gz") bytes gzipped"
  if [ -n "$chromium" ]; then
    for run in 1 2 3; do
      profile=$(mktemp -d)
      ms=$("$chromium" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" --dump-dom \
        "file://$(realpath "$out/html-$scenario.html")" 2>/dev/null | grep -o 'data-render-ms="[0-9]*"' | grep -o '[0-9]*')
      rm -rf "$profile"
      echo "render (Chromium, run $run): ${ms:-?} ms from navigation start to the report drawn"
    done
  else
    echo "render: chromium not installed, not measured"
  fi
done

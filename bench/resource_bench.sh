#!/usr/bin/env bash
# "Small input, large resource": the hostile inputs of issue 19 next to an ordinary input of about
# the same size, each run once under /usr/bin/time -v. Prints input bytes, peak RSS and peak RSS
# per input byte; a hostile input should cost no more per byte than its baseline, and a run under
# --max-memory should peak within 1.1 x the limit + 64 MiB. Inputs are generated in bench/out/.
set -euo pipefail
build=${1:-build}
ferret="$build/ferret"
out=bench/out/resources
mkdir -p "$out"
if [ ! -x /usr/bin/time ]; then echo "resource bench: needs /usr/bin/time (Debian package 'time')" >&2; exit 1; fi

tiny='{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}'
# 5 KB NCCL log: 50 communicators, each claiming 1,048,576 ranks.
if [ ! -f "$out/nccl-hostile.log" ]; then
  for i in $(seq 0 49); do
    echo "h:1:1 [0] NCCL INFO comm 0x$i rank 0 nranks 1048576 cudaDev 0 busId 1a000 commId 0x$i - Init START"
  done >"$out/nccl-hostile.log"
fi
# Baseline of the same size: 50 lines of an ordinary 8-rank init.
if [ ! -f "$out/nccl-normal.log" ]; then
  for i in $(seq 0 49); do
    echo "h:1:1 [0] NCCL INFO comm 0x$((i % 8)) rank $((i % 8)) nranks 8 cudaDev $((i % 8)) busId 1a000 commId 0x1 - Init START"
  done >"$out/nccl-normal.log"
fi
# ~1.2 MB trace: one kernel on each of 10,000 devices.
if [ ! -f "$out/many-devices.json" ]; then
  {
    printf '{"traceEvents":['
    for d in $(seq 0 9999); do
      [ "$d" -gt 0 ] && printf ','
      printf '{"ph":"X","cat":"kernel","name":"k","pid":%d,"tid":7,"ts":%d,"dur":10,"args":{"device":%d}}' "$d" $((1000 + d % 7)) "$d"
    done
    printf '],"deviceProperties":['
    for d in $(seq 0 9999); do
      [ "$d" -gt 0 ] && printf ','
      printf '{"id":%d,"name":"Test GPU","totalGlobalMem":1024,"computeMajor":9,"computeMinor":0,"numSms":132}' "$d"
    done
    printf ']}'
  } >"$out/many-devices.json"
fi
# Baseline of about the same size: a synthetic H100 training trace.
if [ ! -f "$out/scenario.json" ]; then "$ferret" gen scenario launch-bound --steps 2 -o "$out/scenario.json" >/dev/null; fi
# 600 MB of identical tiny CPU ops, plain and gzip'd (several hundred to one).
if [ ! -f "$out/tiny-events.json" ]; then
  { printf '{"traceEvents":['; yes "$tiny," | head -c 629145600 || true; printf '%s]}' "$tiny"; } >"$out/tiny-events.json"
fi
if [ ! -f "$out/tiny-events.json.gz" ]; then gzip -6 -c "$out/tiny-events.json" >"$out/tiny-events.json.gz"; fi
# Baseline for the large inputs: an ordinary trace, inflated to the same size.
if [ ! -f "$out/inflated.json" ]; then
  "$ferret" gen scenario communication-heavy --steps 20 -o "$out/seed.json" >/dev/null
  "$ferret" gen inflate --from "$out/seed.json" --size 600MiB -o "$out/inflated.json" >/dev/null
fi

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%F)"
printf '%-44s %12s %12s %10s %s\n' case input_bytes peak_rss_kb rss/byte note
measure() {  # label, input file, ferret arguments...
  local label=$1 input=$2
  shift 2
  local bytes rss rc
  bytes=$(stat -c %s "$input")
  set +e
  /usr/bin/time -v "$ferret" "$@" >/dev/null 2>"$out/time.txt"
  rc=$?
  set -e
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$out/time.txt")
  printf '%-44s %12d %12d %10.3f exit %d\n' "$label" "$bytes" "$rss" "$(echo "$rss * 1024 / $bytes" | bc -l)" "$rc"
}
measure "baseline: NCCL log, 8 ranks" "$out/nccl-normal.log" nccl --json "$out/nccl-normal.log"
measure "NCCL log, nranks 1048576 x 50 lines" "$out/nccl-hostile.log" nccl --json "$out/nccl-hostile.log"
measure "baseline: scenario trace" "$out/scenario.json" analyze --json "$out/scenario.json"
measure "one kernel on each of 10,000 devices" "$out/many-devices.json" analyze --json "$out/many-devices.json"
measure "baseline: inflated trace, --max-memory 256MiB" "$out/inflated.json" analyze --json --max-memory 256MiB "$out/inflated.json"
measure "tiny events, --max-memory 256MiB" "$out/tiny-events.json" analyze --json --max-memory 256MiB "$out/tiny-events.json"
measure "gzip of tiny events, --max-memory 256MiB" "$out/tiny-events.json.gz" analyze --json --max-memory 256MiB "$out/tiny-events.json.gz"
echo "(--max-memory 256MiB = 262144 kB: peak RSS should stay under 1.1 x that + 64 MiB = 353894 kB)"

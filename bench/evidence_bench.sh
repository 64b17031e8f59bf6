#!/usr/bin/env bash
# Throughput and peak memory of the readers of evidence beyond the trace (issue 18): `ferret smi`
# on a day of nvidia-smi samples for 8 GPUs, `ferret memory` on a training log holding thousands of
# memory_summary() tables and on a large allocator snapshot. Each input is also read by `wc -l`
# in the same script, the floor of any line reader on this machine. Prints MB/s and peak RSS.
# Inputs are generated in bench/out/evidence/ (the snapshot with /usr/bin/python3's pickle).
set -euo pipefail
build=${1:-build}
ferret="$build/ferret"
out=bench/out/evidence
mkdir -p "$out"
if [ ! -x /usr/bin/time ]; then echo "evidence bench: needs /usr/bin/time (Debian package 'time')" >&2; exit 1; fi

# 24 h of `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,
# memory.total,power.draw,power.limit,clocks.sm,clocks.max.sm,temperature.gpu --format=csv -l 1`
# on 8 GPUs: 691,200 rows.
if [ ! -f "$out/query-8gpu-24h.csv" ]; then
  awk 'BEGIN {
    print "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W], power.limit [W], clocks.sm [MHz], clocks.max.sm [MHz], temperature.gpu";
    for (s = 0; s < 86400; s++) {
      h = int(s / 3600); m = int((s % 3600) / 60); sec = s % 60;
      for (g = 0; g < 8; g++) {
        u = (s % 600 < 30) ? 0 : 85 + (s * 7 + g * 13) % 15;
        printf "2026/12/01 %02d:%02d:%02d.%03d, %d, %d %%, %d %%, %d MiB, 81559 MiB, %.2f W, 700.00 W, %d MHz, 1980 MHz, %d\n",
               h, m, sec, (g * 37) % 1000, g, u, u / 2, 40000 + (s % 100) * 10, 300 + u * 4, 1755 + (s % 3) * 75, 60 + u / 10;
      }
    }
  }' >"$out/query-8gpu-24h.csv"
fi
# A training log with a memory_summary() every 50 lines of chatter, 4,000 summaries in all (the
# reader keeps at most 4,096).
if [ ! -f "$out/train-summaries.log" ]; then
  for i in $(seq 1 4000); do
    for j in $(seq 1 50); do echo "[rank0]: step $i.$j loss 2.$((i % 97)) lr 3e-4 grad_norm 1.$((j % 9))"; done
    sed "s/^/[rank0]: /" tests/data/memory/summary-torch2.txt
  done >"$out/train-summaries.log"
fi
# A snapshot of 20,000 segments of 4 blocks with 6 frames each and a 200,000-event device trace.
if [ ! -f "$out/snapshot-large.pickle" ]; then
  /usr/bin/python3 - "$out/snapshot-large.pickle" <<'PY'
import pickle, sys
MiB = 1 << 20
frames = [{"filename": f"/src/model/layer{k}.py", "line": 10 + k, "name": f"forward_{k}"} for k in range(6)]
segments = []
for s in range(20000):
    base = 0x7F0000000000 + s * 64 * MiB
    blocks = [{"address": base + b * 16 * MiB, "size": 16 * MiB, "requested_size": 16 * MiB - 512,
               "state": "active_allocated" if b % 2 == 0 else "inactive", "frames": list(frames)} for b in range(4)]
    segments.append({"device": s % 8, "address": base, "total_size": 64 * MiB, "stream": 0,
                     "segment_type": "large", "allocated_size": 32 * MiB, "active_size": 32 * MiB,
                     "requested_size": 32 * MiB - 1024, "blocks": blocks})
trace = [{"action": "alloc" if i % 2 == 0 else "free_completed", "addr": 0x7F0000000000 + (i // 2) % 1000 * MiB,
          "size": MiB, "stream": 0, "time_us": i, "frames": frames[:2]} for i in range(200000)]
snapshot = {"segments": segments, "device_traces": [trace] + [[] for _ in range(7)],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False}}
with open(sys.argv[1], "wb") as f:
    pickle.dump(snapshot, f, protocol=4)
PY
fi

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%F)"
printf '%-40s %12s %10s %12s\n' case input_MB MB/s peak_rss_MB
measure() {  # label, input file, command...
  local label=$1 input=$2
  shift 2
  local bytes start end rss
  bytes=$(stat -c %s "$input")
  start=$(date +%s.%N)
  /usr/bin/time -v "$@" >/dev/null 2>"$out/time.txt" || true
  end=$(date +%s.%N)
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$out/time.txt")
  printf '%-40s %12.1f %10.1f %12.1f\n' "$label" "$(echo "$bytes / 1000000" | bc -l)" \
    "$(echo "$bytes / 1000000 / ($end - $start)" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
}
for input in query-8gpu-24h.csv train-summaries.log snapshot-large.pickle; do
  measure "baseline: wc -l $input" "$out/$input" wc -l "$out/$input"
  case $input in
    *.csv) measure "ferret smi --json" "$out/$input" "$ferret" smi --json "$out/$input" ;;
    *) measure "ferret memory --json" "$out/$input" "$ferret" memory --json "$out/$input" ;;
  esac
done

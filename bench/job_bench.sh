#!/usr/bin/env bash
# make bench-job: a generated job of 64 ranks x 100 MB (6.4 GB of JSON), analysed end to end as
# one job: on one core, on every core, and spread over 1 and 3 MPI processes. Prints wall time,
# throughput (MB/s of JSON) and peak RSS of each run, and the speed-ups against the one-core run
# and the one-process MPI run of the same script. Files live in bench/out/ (ignored by git).
set -euo pipefail
build=${1:-build}
ranks=${FERRET_JOB_RANKS:-64}
size=${FERRET_JOB_RANK_SIZE:-100MB}
dir=bench/out/job-$ranks-$size
if [ ! -f "$dir/job_truth.json" ]; then
  rm -rf "$dir"
  "$build/ferret" gen job -o "$dir" --ranks "$ranks" --ranks-per-host 8 --target-size "$size" \
    --straggler 13 --straggler-cause input --clock-skew-ms 5
fi
bytes=$(du -cb "$dir"/rank-*.json | tail -1 | cut -f1)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%F)"
echo "job: $ranks ranks, $((bytes / 1000000)) MB of JSON in $dir"
# run NAME COMMAND...: wall seconds and peak RSS (the largest of the processes for MPI, as
# /usr/bin/time reports mpirun's children) into $NAME_s / $NAME_kb.
run() {
  local name=$1; shift
  local log=bench/out/job-$name.time
  /usr/bin/time -v "$@" --json > "benchmark/out/job-$name.json" 2> "$log"
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{split($2,t,":"); if (length(t)==3) print t[1]*3600+t[2]*60+t[3]; else print t[1]*60+t[2]}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$log")
  printf '%-28s %8.2f s %9.0f MB/s  peak RSS %7.1f MiB\n' "$name" "$wall" "$(echo "$bytes / 1000000 / $wall" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
  eval "${name//-/_}_s=$wall"
}
run one-core taskset -c 0 "$build/ferret" analyze "$dir" --jobs 1 --threads 1
run all-cores "$build/ferret" analyze "$dir"
if command -v mpirun > /dev/null && [ -x "$build/ferret-mpi" ]; then
  mpi="mpirun --allow-run-as-root --oversubscribe"
  run mpi-1 $mpi -np 1 "$build/ferret" analyze "$dir" --jobs 1
  run mpi-3 $mpi -np 3 "$build/ferret" analyze "$dir" --jobs 1
  cmp -s bench/out/job-all-cores.json bench/out/job-mpi-3.json && echo "mpi-3 report: identical to the one-process report"
  printf 'speed-up: all cores / one core %.2fx; 3 MPI processes / 1 %.2fx\n' \
    "$(echo "$one_core_s / $all_cores_s" | bc -l)" "$(echo "$mpi_1_s / $mpi_3_s" | bc -l)"
else
  printf 'speed-up: all cores / one core %.2fx (no MPI build)\n' "$(echo "$one_core_s / $all_cores_s" | bc -l)"
fi

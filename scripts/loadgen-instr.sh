#!/usr/bin/env bash
# Instructions per request of each bench/peers/loadgen target, counted by
# valgrind (callgrind), which do not depend on the machine's load
# (BENCHMARKS.md, issue 26 point 4). Usage:
#
#   scripts/loadgen-instr.sh [TARGET[:STORE] ...]
#
# Each target (default: raw, null, celguard-api and celguard-hook with no
# store and with memory:, and opa) runs once with 100 and once with 4,100
# requests at concurrency 1. loadgen runs each target's server in a
# process of its own, and valgrind follows it (--trace-children=yes), so
# the server's and the generator's counts come apart: the difference of
# each between the two runs, divided by 4,000, is printed, so start-up
# (compiling both policies, OPA's runtime) cancels out, with the ratio of
# OPA's server count to each server's. Needs valgrind (apt-get install
# valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
(cd bench/peers && go build -o "$T/loadgen" ./loadgen)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(raw null celguard-api:none celguard-hook:none celguard-api:memory: celguard-hook:memory: opa)
# count N TARGET STORE prints "SERVER GENERATOR": each process's instructions.
count() {
  rm -f "$T"/cg.*.log
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null --trace-children=yes \
    --log-file="$T/cg.%p.log" "$T/loadgen" -requests "$1" -c 1 -targets "$2" -store "$3" >/dev/null 2>&1
  local srv=0 gen=0 f n
  for f in "$T"/cg.*.log; do
    n=$(awk '/Collected/ {print $4}' "$f")
    [ -n "$n" ] || { echo "loadgen-instr.sh: no count in $f" >&2; exit 1; }
    if grep -q -- ' -serve ' "$f"; then srv=$((srv + n)); else gen=$((gen + n)); fi
  done
  echo "$srv $gen"
}
declare -A srv gen
for ts in "${targets[@]}"; do
  t=${ts%%:*} st=none
  [ "$t" = "$ts" ] || st=${ts#*:}
  read -r sa ga <<<"$(count 100 "$t" "$st")"
  read -r sb gb <<<"$(count 4100 "$t" "$st")"
  srv[$ts]=$(( (sb - sa) / 4000 )) gen[$ts]=$(( (gb - ga) / 4000 ))
done
printf '%-22s %14s %14s %14s %12s\n' target server/request generator/req total/request "OPA / server"
for ts in "${targets[@]}"; do
  ratio=""
  if [ -n "${srv[opa]:-}" ] && [ "${srv[$ts]}" -gt 0 ]; then
    ratio=$(awk -v o="${srv[opa]}" -v c="${srv[$ts]}" 'BEGIN {printf "%.2fx", o / c}')
  fi
  printf '%-22s %14s %14s %14s %12s\n' "$ts" "${srv[$ts]}" "${gen[$ts]}" $(( ${srv[$ts]} + ${gen[$ts]} )) "$ratio"
done

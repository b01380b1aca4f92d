#!/usr/bin/env bash
# Instructions per request of each bench/peers/loadgen target, counted by
# valgrind (callgrind), which do not depend on the machine's load
# (BENCHMARKS.md, issue 26 point 4). Usage:
#
#   scripts/loadgen-instr.sh [TARGET[:STORE] ...]
#
# Each target (default: raw, null, celguard-api and celguard-hook with no
# store and with memory:, and opa) runs once with 100 and once with 2,100
# requests at concurrency 1 over the whole loadgen process (the generator,
# the server, its decision); the difference divided by 2,000 is printed, so
# start-up (compiling both policies, OPA's runtime) cancels out, with the
# ratio of OPA's count to it. Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
(cd bench/peers && go build -o "$T/loadgen" ./loadgen)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(raw null celguard-api:none celguard-hook:none celguard-api:memory: celguard-hook:memory: opa)
count() {
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$T/loadgen" -requests "$1" -c 1 -targets "$2" -store "$3" 2>&1 >/dev/null |
    awk '/Collected/ {print $4}'
}
declare -A per
for ts in "${targets[@]}"; do
  t=${ts%%:*} st=none
  [ "$t" = "$ts" ] || st=${ts#*:}
  a=$(count 100 "$t" "$st")
  b=$(count 2100 "$t" "$st")
  per[$ts]=$(( (b - a) / 2000 ))
done
printf '%-22s %14s %12s\n' target instr/request "OPA / it"
for ts in "${targets[@]}"; do
  ratio=""
  if [ -n "${per[opa]:-}" ] && [ "${per[$ts]}" -gt 0 ]; then
    ratio=$(awk -v o="${per[opa]}" -v c="${per[$ts]}" 'BEGIN {printf "%.2fx", o / c}')
  fi
  printf '%-22s %14s %12s\n' "$ts" "${per[$ts]}" "$ratio"
done

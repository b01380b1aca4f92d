#!/usr/bin/env bash
# Reproduces the figures in BENCHMARKS.md (issue 6). Usage:
#
#   scripts/bench.sh [count]            # everything, -count 6 by default
#   BENCH_SKIP_PEERS=1 scripts/bench.sh  # main module only (no OPA download)
#   BENCH_OUT=dir scripts/bench.sh       # keep the raw outputs in dir
#
# It runs the main module's benchmarks (eval/) and the peer comparison module
# (bench/peers: hand-written Go, raw cel-go, OPA/Rego and celguard on the same
# 20 rules), prints benchstat's summary of each, then the targets of issue 6
# as ratios of benchstat's medians. Every run records the load (uptime): the
# machine is shared, so compare runs made at a similar load. The main
# benchmarks run on 2 cores (-cpu 2; the parallel one at -cpu 1,2) to match
# the issue's figures. CI (.ci/run) runs none of this.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
out=${BENCH_OUT:-$(mktemp -d)}
mkdir -p "$out"

if command -v benchstat >/dev/null; then
  benchstat=(benchstat)
elif [ -x "$(go env GOPATH)/bin/benchstat" ]; then
  benchstat=("$(go env GOPATH)/bin/benchstat")
else
  benchstat=(go run golang.org/x/perf/cmd/benchstat@latest)
fi

machine() {
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(go version)"
  echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "# rev: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
}

# bench DIR FILE ARGS...: run go test benchmarks in DIR, appending to FILE,
# with uptime before and after.
bench() {
  local dir=$1 file=$2
  shift 2
  {
    echo "# uptime before: $(uptime)"
    (cd "$dir" && go test -run '^$' -benchmem "$@") || echo "# FAILED: (cd $dir && go test $*)"
    echo "# uptime after: $(uptime)"
  } | tee -a "$file"
}

main="$out/main.txt" mem="$out/memory.txt" peers="$out/peers.txt"
: >"$main" ; : >"$mem" ; : >"$peers"
machine | tee "$out/machine.txt"

# Decisions, compile of the 20 rules, scale, the recommended bundle.
bench . "$main" ./eval/ -cpu 2 -count "$count" \
  -bench '^Benchmark(Decide20Rules|DecideReadOnly|DecideAllow|AfterWithCounters|Compile20Rules|Scale|Recommended|CompileRecommended)$'
# Compile time against the number of rules (a 10,000-rule compile is seconds
# per op: a fixed number of ops keeps the run short).
bench . "$main" ./eval/ -cpu 2 -count "$count" -benchtime 3x -bench '^BenchmarkCompileRules$'
# Parallel throughput: serial at -cpu 1 against parallel at -cpu 2.
bench . "$main" ./eval/ -cpu 1,2 -count "$count" -bench '^BenchmarkParallel$'
# Memory per session and per key: one op builds the whole population.
bench . "$mem" ./eval/ -cpu 2 -count 3 -benchtime 1x -bench '^BenchmarkMemory$'

if [ -z "${BENCH_SKIP_PEERS:-}" ]; then
  bench bench/peers "$peers" . -cpu 2 -count "$count" -run '^TestSameDecisions$' -bench .
fi

stat() { "${benchstat[@]}" "$@" 2>/dev/null; }
for f in "$main" "$mem" "$peers"; do
  [ -s "$f" ] || continue
  echo
  echo "## benchstat $(basename "$f")"
  stat "$f"
done

# median FILE UNIT NAME: benchstat's median of NAME in UNIT (sec/op,
# allocs/op, B/op or a custom unit), empty when absent.
median() {
  [ -s "$1" ] || return 0
  stat -format csv "$1" | awk -F, -v unit="$2" -v name="$3" '
    $3 == "CI" { u = $2; next }
    u == unit && $1 == name { print $2; exit }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
ns() { awk -v a="$1" 'BEGIN { if (a == "") print "n/a"; else printf "%.0f", a * 1e9 }'; }
# check VALUE OP LIMIT: met or MISSED.
check() { awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
  if (v == "n/a" || v == "") { print "n/a"; exit }
  ok = (op == "<=") ? v <= l : (op == ">=") ? v >= l : (op == "<") ? v < l : v > l
  print ok ? "met" : "MISSED" }'; }
row() { printf '%-62s %12s  %-8s %s\n' "$1" "$2" "$3" "$4"; }

hw=$(median "$peers" sec/op Stream/handwritten-2)
cg=$(median "$peers" sec/op Stream/celgo-2)
opa=$(median "$peers" sec/op Stream/opa-2)
me=$(median "$peers" sec/op Stream/celguard-2)
ro=$(median "$peers" sec/op ReadOnly/celguard-2)
ro_main=$(median "$main" sec/op DecideReadOnly-2)
s20=$(median "$main" sec/op Scale/rules=20-2)
s10k=$(median "$main" sec/op Scale/rules=10000-2)
c100=$(median "$main" sec/rule CompileRules/n=100-2)
c10k=$(median "$main" sec/rule CompileRules/n=10000-2)
c1k=$(median "$main" sec/op CompileRules/n=1000-2)
allow=$(median "$main" allocs/op DecideAllow-2)
serial=$(median "$main" sec/op Parallel/serial)
par=$(median "$main" sec/op Parallel/parallel-2)

echo
echo "## targets of issue 6 (medians; ratios of one run)"
row "target" "value" "result" "limit"
r=$(ratio "$me" "$cg");   row "stream: celguard / raw cel-go" "$r" "$(check "$r" '<=' 0.8)" "<= 0.8"
r=$(ratio "$me" "$hw");   row "stream: celguard / hand-written Go" "$r" "$(check "$r" '<=' 1.0)" "<= 1.0"
r=$(ratio "$opa" "$me");  row "stream: OPA / celguard" "$r" "$(check "$r" '>=' 4)" ">= 4"
r=$(ns "$ro");            row "read-only: celguard ns/decision (peers)" "$r" "$(check "$r" '<' 300)" "< 300"
r=$(ns "$ro_main");       row "read-only: celguard ns/decision (eval DecideReadOnly)" "$r" "$(check "$r" '<' 300)" "< 300"
r=$(ratio "$s10k" "$s20"); row "scale: 10,000 rules / 20 rules (20 matchable)" "$r" "$(check "$r" '<=' 2)" "<= 2"
r=$(ratio "$c10k" "$c100"); row "compile: ns/rule at 10,000 / at 100 (linear ~1)" "$r" "$(check "$r" '<=' 1.5)" "<= 1.5"
r=$(awk -v a="$c1k" 'BEGIN { if (a == "") print "n/a"; else printf "%.3f", a }'); row "compile: 1,000 rules, seconds" "$r" "$(check "$r" '<' 0.25)" "< 0.25 (well under 1 s)"
row "allow decision: allocs/op (DecideAllow)" "${allow:-n/a}" "$(check "${allow:-n/a}" '<=' 10)" "<= 10"
r=$(ratio "$serial" "$par"); row "parallel: serial (-cpu 1) / RunParallel (-cpu 2)" "$r" "$(check "$r" '>=' 1.8)" ">= 1.8"
# Budgets of the recommended bundle (BENCHMARKS.md, "Recommended bundle").
for c in benign-short:100000:300 benign-long:500000:1000 hostile-short:100000:300 hostile-long:500000:1000; do
  IFS=: read -r name tb ab <<<"$c"
  t=$(ns "$(median "$main" sec/op "Recommended/$name-2")")
  a=$(median "$main" allocs/op "Recommended/$name-2")
  row "recommended $name: ns/decision" "$t" "$(check "$t" '<=' "$tb")" "<= $tb"
  row "recommended $name: allocs/decision" "${a:-n/a}" "$(check "${a:-n/a}" '<=' "$ab")" "<= $ab"
done
for m in sessions:B/session sessions-loop-detection:B/session keys-count:B/key keys-window:B/key bound:B/session-after-200k-keys; do
  row "memory ${m%%:*} (${m#*:})" "$(median "$mem" "${m#*:}" "Memory/${m%%:*}-2")" "" ""
done
echo
echo "raw outputs: $out"

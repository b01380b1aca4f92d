#!/usr/bin/env bash
# Reproduces the figures in BENCHMARKS.md. Usage: scripts/bench.sh [count]
# Prints benchstat's summary when benchstat is installed
# (go install golang.org/x/perf/cmd/benchstat@latest), the raw lines otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
out=$(mktemp)
go test ./eval/ -run '^$' -bench . -benchmem -count "$count" | tee "$out"
if command -v benchstat >/dev/null; then
  benchstat "$out"
fi

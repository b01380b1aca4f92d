#!/usr/bin/env bash
# Instructions per operation of a Go benchmark, counted by valgrind
# (callgrind), which do not depend on the machine's load (BENCHMARKS.md,
# issue 19). Usage:
#
#   scripts/instr.sh TESTBINARY BENCHREGEX [N1 N2]
#
# TESTBINARY is a test binary (go test -c); the benchmark runs once with
# -test.benchtime N1x and once with N2x (default 200 and 1200), on one core,
# and the difference of the two counts divided by N2 - N1 is printed: the
# set-up (building the policy) cancels out. Needs valgrind (apt-get install
# valgrind).
set -euo pipefail
bin=$1 bench=$2 n1=${3:-200} n2=${4:-1200}
count() {
  GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" -test.cpu 1 2>&1 >/dev/null |
    awk '/refs:/ {gsub(",", "", $4); print $4}'
}
a=$(count "$n1")
b=$(count "$n2")
echo "$bench $(( (b - a) / (n2 - n1) )) instructions/op"

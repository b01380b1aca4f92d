package toolchain

import "testing"

// BenchmarkRuns is the cost every written path pays: the table match.
func BenchmarkRuns(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Runs("/home/dev/app/src/components/Button.tsx")
	}
}

// BenchmarkAnalyzeMakefile is the cost of a write to a listed file.
func BenchmarkAnalyzeMakefile(b *testing.B) {
	const mk = "GO ?= go\n.PHONY: test lint\ntest:\n\t$(GO) test -race ./...\nlint:\n\tgolangci-lint run\nbuild:\n\tmkdir -p bin\n\t$(GO) build -o bin/app ./cmd/app\n"
	b.ReportAllocs()
	for b.Loop() {
		Analyze("Makefile", mk)
	}
}

// BenchmarkAnalyzeWorkflow reads a YAML workflow.
func BenchmarkAnalyzeWorkflow(b *testing.B) {
	const wf = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: npm ci\n      - run: npm test\n"
	b.ReportAllocs()
	for b.Loop() {
		Analyze(".github/workflows/ci.yml", wf)
	}
}

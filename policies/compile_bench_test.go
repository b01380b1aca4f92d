package policies_test

import (
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
)

// BenchmarkCompileRecommended compiles the recommended bundle as a hook
// process does: cold, and with a warm AST cache.
func BenchmarkCompileRecommended(b *testing.B) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compile.Compile(srcs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := &compile.MemoryASTCache{}
		if _, err := compile.Compile(srcs, compile.WithASTCache(cache)); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compile.Compile(srcs, compile.WithASTCache(cache)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

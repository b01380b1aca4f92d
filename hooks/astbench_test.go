package hooks

import (
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
)

// BenchmarkWarmCompile is what a warm hook process spends on its policies:
// load the AST cache file of the state directory and compile the
// recommended bundle from it.
func BenchmarkWarmCompile(b *testing.B) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	c := loadCacheForBench(b, dir)
	if _, err := compile.Compile(srcs, compile.WithASTCache(c)); err != nil {
		b.Fatal(err)
	}
	if err := c.Save(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := loadCacheForBench(b, dir)
		if _, err := compile.Compile(srcs, compile.WithASTCache(c)); err != nil {
			b.Fatal(err)
		}
		if err := c.Save(); err != nil {
			b.Fatal(err)
		}
	}
}

func loadCacheForBench(b *testing.B, dir string) *ASTCache {
	key, err := LoadKey(dir)
	if err != nil {
		b.Fatal(err)
	}
	return LoadASTCache(dir, key)
}

// BenchmarkASTCacheVerify is what authenticating the cache adds to a warm
// hook: read the state key and check the MAC of every entry the
// recommended bundle uses.
func BenchmarkASTCacheVerify(b *testing.B) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	c := loadCacheForBench(b, dir)
	if _, err := compile.Compile(srcs, compile.WithASTCache(c)); err != nil {
		b.Fatal(err)
	}
	var size int
	for _, e := range c.entries {
		size += len(e.Value)
	}
	b.ReportMetric(float64(len(c.entries)), "entries")
	b.ReportMetric(float64(size), "bytes")
	b.ReportAllocs()
	for b.Loop() {
		key, err := LoadKey(dir)
		if err != nil {
			b.Fatal(err)
		}
		for k, e := range c.entries {
			if !key.verify(e.MAC, domainASTCache, []byte(k), e.Value) {
				b.Fatal("bad MAC")
			}
		}
	}
}

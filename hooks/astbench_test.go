package hooks

import (
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// BenchmarkWarmCompile is what a warm hook process spends on its policies:
// load the AST cache file of the state directory and compile the
// recommended bundle from it.
func BenchmarkWarmCompile(b *testing.B) {
	srcs, dir, _ := warmCache(b)
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

// warmCache compiles the recommended bundle into the AST cache of a new
// state directory and saves it.
func warmCache(b *testing.B) ([]policy.Source, string, *ASTCache) {
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
	return srcs, dir, c
}

func loadCacheForBench(b *testing.B, dir string) *ASTCache {
	key, err := statedir.LoadKey(dir)
	if err != nil {
		b.Fatal(err)
	}
	return LoadASTCache(dir, key)
}

// BenchmarkASTCacheVerify is what authenticating the cache adds to a warm
// hook: read the state key and check the MAC of every entry the
// recommended bundle uses.
func BenchmarkASTCacheVerify(b *testing.B) {
	_, dir, c := warmCache(b)
	var size int
	for _, e := range c.entries {
		size += len(e.Value)
	}
	b.ReportAllocs()
	for b.Loop() {
		key, err := statedir.LoadKey(dir)
		if err != nil {
			b.Fatal(err)
		}
		for k, e := range c.entries {
			if !key.Verify(e.MAC, domainASTCache, []byte(k), e.Value) {
				b.Fatal("bad MAC")
			}
		}
	}
	b.ReportMetric(float64(len(c.entries)), "entries")
	b.ReportMetric(float64(size), "cached-bytes")
}

package conformance_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/conformance"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// minCases is the least number of cases the suite must hold, so that a
// loading bug cannot pass by running nothing.
const minCases = 120

func TestConformance(t *testing.T) {
	rep, err := policytest.RunFS(t.Context(), conformance.Cases, "cases", policytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range rep.Suites {
		if s.Error != "" {
			t.Errorf("%s: %s", s.File, s.Error)
		}
		for _, c := range s.Cases {
			total++
			t.Run(s.Name+"/"+c.Name, func(t *testing.T) {
				for _, f := range c.Failures {
					t.Errorf("%s:%d: %s", s.File, c.Line, f)
				}
			})
		}
	}
	if total < minCases {
		t.Errorf("the suite ran %d cases; it must hold at least %d", total, minCases)
	}
}

// TestConformanceReplayed runs the suite again with every set replayed
// from a compiled-set cache (compile.WithSetCache) instead of compiled in
// full: every case must give the same result, and every suite whose
// policies compile must actually be replayed.
func TestConformanceReplayed(t *testing.T) {
	full, err := policytest.RunFS(t.Context(), conformance.Cases, "cases", policytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	replayed := 0
	check := func(srcs []policy.Source, opts ...compile.Option) (*compile.PolicySet, policy.Diagnostics, error) {
		set, ds, err := compile.Check(srcs, opts...)
		if err != nil || set == nil {
			return set, ds, err
		}
		cache := &compile.MemorySetCache{}
		opts = append(opts, compile.WithSetCache(cache))
		if _, err := compile.Compile(srcs, opts...); err != nil { // records the set
			return nil, nil, err
		}
		again, err := compile.Compile(srcs, opts...)
		if err != nil {
			return nil, nil, err
		}
		if !again.FromCache() {
			t.Errorf("%v: the set was not replayed from the cache", srcs[0].Name)
		}
		replayed++
		return again, ds, nil
	}
	rep, err := policytest.RunFS(t.Context(), conformance.Cases, "cases", policytest.Options{Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if replayed < minCases/4 {
		t.Errorf("only %d suites were replayed", replayed)
	}
	if rep.Passed != full.Passed || rep.Failed != full.Failed || len(rep.Suites) != len(full.Suites) {
		t.Fatalf("replayed: %d passed, %d failed in %d suites; in full: %d, %d in %d", rep.Passed, rep.Failed, len(rep.Suites), full.Passed, full.Failed, len(full.Suites))
	}
	for i, s := range rep.Suites {
		f := full.Suites[i]
		if !maps.Equal(s.Fired, f.Fired) {
			t.Errorf("%s: replayed, the rules fired %v; in full %v", s.File, s.Fired, f.Fired)
		}
		if s.Error != f.Error || len(s.Cases) != len(f.Cases) {
			t.Errorf("%s: replayed %q with %d cases, in full %q with %d", s.File, s.Error, len(s.Cases), f.Error, len(f.Cases))
			continue
		}
		for j, c := range s.Cases {
			if c.Pass != f.Cases[j].Pass || !slices.Equal(c.Failures, f.Cases[j].Failures) {
				t.Errorf("%s/%s: replayed %v %v, in full %v %v", s.Name, c.Name, c.Pass, c.Failures, f.Cases[j].Pass, f.Cases[j].Failures)
			}
		}
	}
}

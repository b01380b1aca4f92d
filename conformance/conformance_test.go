package conformance_test

import (
	"testing"

	"github.com/celguard/celguard/conformance"
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

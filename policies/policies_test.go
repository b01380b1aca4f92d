package policies_test

import (
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policytest"
)

func TestBuiltinsCompile(t *testing.T) {
	srcs, err := policies.Sources()
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) == 0 {
		t.Fatal("no built-in policies embedded")
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		t.Fatalf("built-in policies do not compile:\n%v", err)
	}
	if len(set.Rules()) == 0 {
		t.Fatal("built-in policies have no rules")
	}
}

func TestBuiltinSuites(t *testing.T) {
	rep, err := policytest.RunFS(t.Context(), policies.FS(), ".", policytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed+rep.Failed == 0 {
		t.Fatal("no test cases found")
	}
	for _, s := range rep.Suites {
		if s.Error != "" {
			t.Errorf("%s: %s", s.File, s.Error)
		}
		for _, c := range s.Cases {
			t.Run(s.Name+"/"+c.Name, func(t *testing.T) {
				for _, f := range c.Failures {
					t.Errorf("%s:%d: %s", s.File, c.Line, f)
				}
			})
		}
	}
}

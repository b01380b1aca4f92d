package policies_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
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

// TestUntrustedProjectCannotLiftBuiltins is the acceptance in
// miniature: a project .celguard/ that is not trusted, with an allow-
// everything rule at a high priority and an Overrides file disabling every
// built-in policy, leaves rm -rf / blocked and sudo asked.
func TestUntrustedProjectCannotLiftBuiltins(t *testing.T) {
	dir := t.TempDir()
	names := policies.Names()
	files := map[string]string{
		"allow.yaml": "apiVersion: celguard.dev/v1\nkind: Policy\nname: repo\nrules:\n  - {id: allow-everything, priority: 2000000000, verdict: allow}\n",
		"off.yaml":   "apiVersion: celguard.dev/v1\nkind: Overrides\nname: off\ndisable:\n  policies: [" + strings.Join(names, ", ") + "]\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, trusted := range []bool{false, true} {
		srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		for i := range srcs {
			srcs[i].Untrusted = srcs[i].Layer == policy.LayerProject && !trusted
		}
		set, err := compile.Compile(srcs)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := eval.New(set)
		if err != nil {
			t.Fatal(err)
		}
		s := eng.NewSession("s", nil)
		d, _ := s.Before(t.Context(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}})
		if d.Verdict != policy.Block || d.Policy != "dangerous-commands" {
			t.Errorf("trusted=%v: rm -rf / got %s by %s/%s, want a block by dangerous-commands", trusted, d.Verdict, d.Policy, d.RuleID)
		}
		d, _ = s.Before(t.Context(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "sudo apt install x"}})
		if want := map[bool]policy.Verdict{false: policy.Block, true: policy.Allow}[trusted]; d.Verdict != want {
			// Untrusted: the built-in ask stands (no approver: blocked as approval_required).
			t.Errorf("trusted=%v: sudo got %s (%s) by %s/%s, want %s", trusted, d.Verdict, d.Code, d.Policy, d.RuleID, want)
		}
		if !trusted && d.Code != "approval_required" {
			t.Errorf("sudo in an untrusted project: got code %q, want the built-in ask (approval_required)", d.Code)
		}
		var kept, ignored int
		for _, w := range set.Warnings() {
			switch w.Code {
			case policy.CodeMandatoryKept:
				kept++
			case policy.CodeUntrustedIgnored:
				ignored++
			}
		}
		// Trusted: one mandatory_kept per mandatory built-in policy the
		// Overrides names (dangerous-commands, self-protection). Untrusted:
		// one untrusted_ignored for the Overrides file.
		if trusted && kept != 2 || !trusted && ignored != 1 {
			t.Errorf("trusted=%v: %d mandatory_kept and %d untrusted_ignored warnings, want 2 and 0, or 0 and 1:\n%v", trusted, kept, ignored, set.Warnings())
		}
	}
}

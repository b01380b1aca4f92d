package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestLintBuiltinPoliciesFailOnWarning is issue 16, point 6: `celguard
// lint --fail-on warning policies/` exits 0 on the shipped bundle (its
// cost warnings each carry a # celguard:ignore comment with a reason).
func TestLintBuiltinPoliciesFailOnWarning(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"lint", "--fail-on", "warning", "../../policies"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("celguard lint --fail-on warning policies/ exited %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "no problems") {
		t.Errorf("summary = %q, want no problems", stderr.String())
	}
}

package eval_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// mustSet compiles policies given as "name.yaml" -> rules-only YAML; the
// header (apiVersion, kind, name) is added from the file name.
func mustSet(t testing.TB, files map[string]string) *compile.PolicySet {
	t.Helper()
	var srcs []policy.Source
	for name, body := range files {
		hdr := fmt.Sprintf("apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\n", strings.TrimSuffix(name, ".yaml"))
		srcs = append(srcs, policy.Source{Name: name, Data: []byte(hdr + body)})
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return set
}

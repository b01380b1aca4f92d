package policies_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// TestProtectFiles fills the self-protection policy's secret_files and
// nothing else: the other sources are the same bytes, the result
// compiles, and a path that needs quoting in CEL is quoted.
func TestProtectFiles(t *testing.T) {
	srcs, err := policies.Sources()
	if err != nil {
		t.Fatal(err)
	}
	srcs = append([]policy.Source{policies.ToolClasses()}, srcs...)
	paths := []string{"/etc/celguard/operator-token", `/srv/a "quoted"\dir/token`, "~/.celguard-token"}
	out, err := policies.ProtectFiles(srcs, paths)
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for i := range srcs {
		if bytes.Equal(srcs[i].Data, out[i].Data) {
			continue
		}
		changed++
		if srcs[i].Name != policies.SelfProtectionSource {
			t.Errorf("%s changed", srcs[i].Name)
		}
		if !strings.Contains(string(out[i].Data), `"/etc/celguard/operator-token"`) {
			t.Errorf("secret_files not filled:\n%s", out[i].Data)
		}
	}
	if changed != 1 {
		t.Fatalf("%d sources changed, want 1", changed)
	}
	if _, err := compile.Compile(out); err != nil {
		t.Fatalf("the protected sources do not compile: %v", err)
	}
	if same, err := policies.ProtectFiles(srcs, nil); err != nil || &same[0] != &srcs[0] {
		t.Errorf("no paths: %v, want the sources as they are", err)
	}
	for _, bad := range []string{"token", "./token", "../x"} {
		if _, err := policies.ProtectFiles(srcs, []string{bad}); err == nil {
			t.Errorf("relative %q accepted", bad)
		}
	}
}

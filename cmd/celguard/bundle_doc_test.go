package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/celguard/celguard/internal/registrytest"
)

// TestBundlesDoc runs every ```sh block of docs/bundles.md, in order, as
// one bash script against a real registry on loopback, in a scratch home:
// the walkthrough from key creation to rotation runs as written. Its
// refusals are part of the script (a pull that must fail fails the script
// if it succeeds); the output must show each step's outcome.
func TestBundlesDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bundles.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 7 {
		t.Fatalf("docs/bundles.md has %d sh blocks; the walkthrough has more", len(blocks))
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\n")
	for _, b := range blocks {
		script.WriteString(b[1])
	}
	reg := registrytest.Start(t)
	work := t.TempDir()
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "CELGUARD_TEST_AUDIT=1", "REGISTRY="+reg.Addr(), "HOME="+filepath.Join(work, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(work, "home", ".config"), "XDG_STATE_HOME="+filepath.Join(work, "home", ".local", "state"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	// policies list --effective shows the bundle's policy in the user layer.
	if !regexp.MustCompile(`(?m)^user +no-terraform-destroy +bundle:acme@v1\.0\.0/serial-1/no-destroy\.yaml +1$`).Match(out) {
		t.Errorf("policies list --effective does not show the bundle's policy\n%s", out)
	}
	for _, want := range []string{
		"built acme-v1.tar.gz: acme v1.0.0 serial 1 for the user layer",
		"holds 2 signatures",
		"verified acme v1.0.0 (serial 1), signed by",
		"acme (user layer): in force: acme v1.0.0 (serial 1) from oci://" + reg.Addr() + "/acme/policies:stable",
		`"verdict":"block","phase":"before","tool":"Bash","rule_id":"no-terraform-destroy","policy":"no-terraform-destroy","file":"bundle:acme@v1.0.0/serial-1/no-destroy.yaml"`,
		`"bundles":["acme@v1.0.0/serial-1"]`,
		"acme (user layer): in force: acme v1.1.0 (serial 2)",
		"bundle_rollback: oci://" + reg.Addr() + "/acme/policies:stable offers serial 1; serial 2 is in force",
		"acme (user layer): in force: acme v1.2.0 (serial 3)",
		"bundle_signature_invalid",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %q\n%s", want, out)
		}
	}
}

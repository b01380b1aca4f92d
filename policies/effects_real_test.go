package policies_test

import (
	"io/fs"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// TestContainerModelAgainstDocker checks risky-commands' model of docker
// against the installed docker client's own reference (its --help, which
// needs no daemon): every option the policy reads as giving a container
// the host is one docker run has, and the build context forms it names
// (a URL, standard input) are the ones docker build documents.
func TestContainerModelAgainstDocker(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the docker client is not installed: the model is checked against it (%v)", err)
	}
	help := func(args ...string) string {
		out, err := exec.Command("docker", append(args, "--help")...).CombinedOutput()
		require.NoError(t, err, "docker %v --help: %s", args, out)
		return string(out)
	}
	data, err := fs.ReadFile(policies.FS(), "risky-commands.yaml")
	require.NoError(t, err)
	p, ds := policy.Parse("risky-commands.yaml", data)
	require.Empty(t, ds.Errors())
	var flags []string
	for _, v := range p.Variables {
		if v.Name.Value == "container_host_flags" {
			flags = strings.Split(strings.Trim(strings.TrimSpace(v.Expr.Text), `"`), "|")
		}
	}
	require.NotEmpty(t, flags, "container_host_flags")
	flags = append(flags, "--pid", "--network", "--ipc", "--uts", "--userns", "--cgroupns", "--mount", "--volume")
	run := help("run")
	for _, f := range flags {
		assert.Regexp(t, regexp.MustCompile(`(?m)^\s+(-\w, )?`+regexp.QuoteMeta(f)+`\s`), run, "docker run has %s", f)
	}
	assert.Contains(t, help("build"), "PATH | URL | -", "docker build reads a context from a URL or standard input")
	assert.Contains(t, help("login"), "Authenticate to a registry", "docker login stores a registry credential")
}

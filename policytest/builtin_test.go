package policytest_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

const teamPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: team
rules:
  - id: no-make
    priority: 2000
    match: {classes: [shell]}
    condition: 'command == "make"'
    verdict: block
    reason: use the CI
`

// runSuite runs one suite file of fsys and returns its result.
func runSuite(t *testing.T, fsys fstest.MapFS, file string, opts policytest.Options) policytest.SuiteResult {
	t.Helper()
	s, err := policytest.ParseSuite(file, fsys[file].Data)
	require.NoError(t, err)
	return policytest.RunSuite(t.Context(), fsys, s, opts)
}

// failures lists a suite's errors and failing steps.
func failures(sr policytest.SuiteResult) []string {
	var out []string
	if sr.Error != "" {
		out = append(out, sr.Error)
	}
	for _, c := range sr.Cases {
		out = append(out, c.Failures...)
	}
	return out
}

// TestSuiteNamesBuiltins: a suite's policies list takes builtin:BUNDLE and
// builtin:POLICY beside paths (a file or a directory of policy files), and
// the suite runs against all of them.
func TestSuiteNamesBuiltins(t *testing.T) {
	const cases = `
cases:
  - name: the bundle blocks rm
    steps:
      - before: {tool: Bash, args: {command: "rm -rf /"}}
        expect: {verdict: block, rule: dangerous-recursive-delete}
  - name: the team blocks make
    steps:
      - before: {tool: Bash, args: {command: "make"}}
        expect: {verdict: block, rule: no-make}
`
	for _, tt := range []struct{ name, policies string }{
		{"a bundle and a directory", "[builtin:recommended, ./team]"},
		{"a bundle and a file", "[builtin:minimal, team/team.yaml]"},
		{"one built-in policy, twice, and a directory", "[builtin:dangerous-commands, team, builtin:dangerous-commands]"},
		{"two bundles that share policies", "[builtin:recommended, builtin:all, ./team]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"s/team/team.yaml": {Data: []byte(teamPolicy)},
				"s/own_test.yaml":  {Data: []byte("policies: " + tt.policies + cases)},
			}
			sr := runSuite(t, fsys, "s/own_test.yaml", policytest.Options{})
			assert.Empty(t, failures(sr))
			assert.Len(t, sr.Cases, 2)
		})
	}
}

// TestSuiteBuiltinsOnly: without a path, only the built-in policies named
// decide; builtin:none brings the tool classes alone.
func TestSuiteBuiltinsOnly(t *testing.T) {
	fsys := fstest.MapFS{
		"minimal_test.yaml": {Data: []byte(`policies: [builtin:minimal]
cases:
  - name: no safe-defaults in minimal
    steps:
      - before: {tool: Read, args: {file_path: "main.go"}}
        expect: {verdict: allow, rule: none}
`)},
		"recommended_test.yaml": {Data: []byte(`policies: [builtin:recommended]
cases:
  - name: safe-defaults allows reading
    steps:
      - before: {tool: Read, args: {file_path: "main.go"}}
        expect: {verdict: allow, rule: allow-read-only-tools}
`)},
	}
	for _, f := range []string{"minimal_test.yaml", "recommended_test.yaml"} {
		sr := runSuite(t, fsys, f, policytest.Options{})
		assert.Empty(t, failures(sr), f)
	}
}

// TestSuiteBuiltinLayer: the built-in entries are the built-in layer, the
// suite's paths opts.Layer: a path policy of a built-in's name replaces it,
// unless the built-in is mandatory (docs/layers.md, rule 1).
func TestSuiteBuiltinLayer(t *testing.T) {
	mine := func(name string) []byte {
		return []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: ` + name + `
rules:
  - id: mine-` + name + `
    match: {tools: [Nothing]}
    verdict: warn
    reason: r
`)
	}
	fsys := fstest.MapFS{
		"secret-redaction.yaml":   {Data: mine("secret-redaction")},
		"dangerous-commands.yaml": {Data: mine("dangerous-commands")},
		"own_test.yaml": {Data: []byte(`policies: [builtin:minimal, secret-redaction.yaml]
cases:
  - name: the built-in secret-redaction is replaced
    steps:
      - after: {tool: Read, args: {file_path: .env}}
        result: {content: "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"}
        expect: {verdict: allow, rule: none}
`)},
		"mandatory_test.yaml": {Data: []byte(`policies: [builtin:minimal, dangerous-commands.yaml]
cases:
  - name: the mandatory dangerous-commands is kept
    steps:
      - before: {tool: Bash, args: {command: "rm -rf /"}}
        expect: {verdict: block, rule: dangerous-recursive-delete}
`)},
	}
	sr := runSuite(t, fsys, "own_test.yaml", policytest.Options{Layer: policy.LayerRegistered})
	assert.Empty(t, failures(sr))
	sr = runSuite(t, fsys, "mandatory_test.yaml", policytest.Options{Layer: policy.LayerRegistered})
	assert.Empty(t, failures(sr))
	// In the built-in layer the two collide.
	sr = runSuite(t, fsys, "own_test.yaml", policytest.Options{})
	assert.Contains(t, strings.Join(failures(sr), "\n"), "duplicate_policy")
}

// TestSuiteBuiltinsWithExtra: the runner's extra sources (the layers of
// celguard test --effective) may hold the same built-in files: each is
// compiled once.
func TestSuiteBuiltinsWithExtra(t *testing.T) {
	extra, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	require.NoError(t, err)
	fsys := fstest.MapFS{
		"s/team/team.yaml": {Data: []byte(teamPolicy)},
		"s/own_test.yaml": {Data: []byte(`policies: [builtin:recommended, builtin:loop-detection, ./team]
cases:
  - name: rm
    steps:
      - before: {tool: Bash, args: {command: "rm -rf /"}}
        expect: {verdict: block, rule: dangerous-recursive-delete}
`)},
	}
	sr := runSuite(t, fsys, "s/own_test.yaml", policytest.Options{Extra: extra, Layer: policy.LayerRegistered})
	assert.Empty(t, failures(sr))
}

// TestSuiteUnknownBuiltin: an unknown bundle or policy name is an error at
// its position, with a code; so is an entry that is not a string.
func TestSuiteUnknownBuiltin(t *testing.T) {
	for _, tt := range []struct{ suite, want string }{
		{"policies: [./team, builtin:recomended]\ncases: []\n",
			`s_test.yaml:1:20: unknown_builtin: "builtin:recomended" names no built-in bundle (all, minimal, none, recommended) and no built-in policy (`},
		{"name: x\npolicies:\n  - builtin:dangerous-command\n",
			`s_test.yaml:3:5: unknown_builtin: "builtin:dangerous-command" names no built-in bundle`},
		{"policies:\n  - \"builtin:\"\n", `s_test.yaml:2:5: unknown_builtin: "builtin:" names`},
		{"policies:\n  - {builtin: recommended}\n", `s_test.yaml:2:5: wrong_type: /policies/0 must be string, not object`},
		{"policies: [a.yaml, '']\n", `s_test.yaml:1:20: invalid_value: /policies/1 must not be empty`},
	} {
		_, err := policytest.ParseSuite("s_test.yaml", []byte(tt.suite))
		require.Error(t, err, tt.suite)
		assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got %v, want %s...", err, tt.want)
	}
	_, err := policytest.ParseSuite("s_test.yaml", []byte("policies: [builtin:recomended]\n"))
	var ds policy.Diagnostics
	require.ErrorAs(t, err, &ds)
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeUnknownBuiltin, ds[0].Code)
	assert.Equal(t, policy.Pos{File: "s_test.yaml", Line: 1, Col: 12}, ds[0].Pos)
}

// TestSuitePathEntries: a path entry that is an empty directory, or does
// not exist, fails the suite.
func TestSuitePathEntries(t *testing.T) {
	fsys := fstest.MapFS{
		"empty/README.md": {Data: []byte("no policies here")},
		"a_test.yaml":     {Data: []byte("policies: [empty]\ncases: [{name: x, steps: [turn: true]}]\n")},
		"b_test.yaml":     {Data: []byte("policies: [missing.yaml]\ncases: [{name: x, steps: [turn: true]}]\n")},
	}
	assert.Contains(t, runSuite(t, fsys, "a_test.yaml", policytest.Options{}).Error, "no policy files in empty")
	assert.Contains(t, runSuite(t, fsys, "b_test.yaml", policytest.Options{}).Error, "missing.yaml")
}

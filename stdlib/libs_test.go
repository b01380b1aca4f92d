package stdlib

import (
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func evalBool(t *testing.T, env *cel.Env, s *CallScope, expr string, vars map[string]any) bool {
	t.Helper()
	out := evalIn(t, env, s, expr, vars)
	b, ok := out.(types.Bool)
	if !ok {
		t.Fatalf("%s = %v (%T), want a bool", expr, out, out)
	}
	return bool(b)
}

func TestGlob(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	s := l.NewCallScope()
	cases := []struct {
		expr string
		want bool
	}{
		{`glob.match("src/a/b.go", "src/**/*.go")`, true},
		{`glob.match("README.md", "*.go")`, false},
		{`glob.match("/home/u/.ssh/id_rsa", "**/.ssh/**")`, true},
		{`glob.match("a/b.go", "*.go")`, false},
		{`glob.match("x.pem", "*.{pem,key}")`, true},
		{`glob.matchAny("a/.env", ["**/.env", "**/.env.*"])`, true},
		{`glob.matchAny("a/.env.example", ["**/.env"])`, false},
		{`glob.matchName("/deep/dir/server.pem", "*.pem")`, true},
		{`glob.matchName("x/.env.example", ".env")`, false},
		{`glob.valid("src/[a")`, false},
		{`glob.valid("src/**")`, true},
		{`glob.couldMatch("/home/u/.config/celguard", "/home/u/.config/celg*/trust.json")`, true},
		{`glob.couldMatch("/home/u/.config/celguard", "/home/u/**")`, true},
		{`glob.couldMatchShell("/srv/app/.celguard", "/srv/app/*")`, false},
		{`glob.couldMatchShell("/srv/app/.celguard", "/srv/app/.c*")`, true},
		{`glob.couldMatchShell("/srv/app/.celguard", "/srv/app/**")`, true},
		{`glob.couldMatch("/etc/celguard", "/etc/celg[u]ard")`, true},
		{`glob.couldMatch("/home/u/.config/celguard", "/home/u/.config/*.yaml")`, false},
		{`glob.couldMatch("/home/u/.config/celguard", "/home/u/.config")`, false},
		{`shell.writes(shell.commands("sort --o out.txt in")[0]) == ["out.txt"]`, true},
		{`shell.writes(shell.commands("cp a b")[0]) == ["b", "b/a"]`, true},
		{`shell.writes(shell.commands("go build -o bin/ ./cmd/x")[0]) == ["bin/", "bin/x"]`, true},
		{`shell.writes(shell.commands("cat x > y")[0]) == ["y"]`, true},
		{`shell.writes({"argv": ["tee", "f"]}) == ["f"]`, true},
		{`shell.commands("ls; cat a").all(c, shell.writes(c).size() == 0)`, true},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, evalBool(t, env, s, tc.expr, nil), tc.expr)
	}
	// A bad pattern that arrives at runtime is an error value, not a panic.
	prg := compile(t, env, `glob.match("a", p)`)
	_, _, err := prg.Eval(map[string]any{"p": "[a"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid pattern")
	prg = compile(t, env, `glob.couldMatch("a", p)`)
	_, _, err = prg.Eval(map[string]any{"p": "[a"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid glob pattern")
}

func TestHash(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	s := l.NewCallScope()
	assert.True(t, evalBool(t, env, s, `hash.short({"b": 2, "a": 1}) == hash.short({"a": 1, "b": 2})`, nil))
	assert.True(t, evalBool(t, env, s, `hash.short(1.0) == hash.short(1)`, nil))
	assert.True(t, evalBool(t, env, s, `hash.short("x").size() == 16 && hash.value([1, 2]).size() == 64`, nil))
	assert.True(t, evalBool(t, env, s, `hash.short(x) == hash.value(x).substring(0, 16)`, map[string]any{"x": map[string]any{"k": []any{1, "a"}}}))
	assert.True(t, evalBool(t, env, s, `hash.short({"a": 1}) != hash.short({"a": 2})`, nil))
	assert.True(t, evalBool(t, env, s, `hash.sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`, nil))
	assert.True(t, evalBool(t, env, s, `hash.sha256(b"abc") == hash.sha256("abc")`, nil))

	// Parsed commands are ordinary maps to canonical and hash.
	assert.True(t, evalBool(t, env, s, `hash.short(shell.commands("ls -la")[0].argv) == hash.short(shell.commands("ls   -la")[0].argv)`, nil))
	assert.True(t, evalBool(t, env, s, `canonical(shell.commands("ls")[0]).startsWith('{"args":[],"argv":["ls"]')`, nil))
	assert.True(t, evalBool(t, env, s, `shell.commands("ls")[0] == shell.commands("ls")[0] && shell.commands("ls")[0] != shell.commands("ls -l")[0]`, nil))

	// Pinned so that counter keys survive upgrades.
	h, err := ShortHash(types.DefaultTypeAdapter.NativeToValue(map[string]any{"b": 2, "a": 1}))
	require.NoError(t, err)
	assert.Equal(t, "43258cff783fe703", h)

	prg := compile(t, env, `hash.short(x)`)
	_, _, err = prg.Eval(map[string]any{"x": types.NewErr("boom")})
	assert.Error(t, err)
}

func TestURL(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	s := l.NewCallScope()
	str := []struct{ expr, want string }{
		{`url.parse("https://User@API.Example.com.:8443/v1?q=1#f").host`, "api.example.com"},
		{`url.parse("https://User@API.Example.com.:8443/v1?q=1#f").port`, "8443"},
		{`url.parse("https://User@API.Example.com.:8443/v1?q=1#f").user`, "User"},
		{`url.parse("HTTPS://x.io/v1?q=1#f").scheme`, "https"},
		{`url.parse("https://x.io/a/b?q=1").path`, "/a/b"},
		{`url.parse("https://x.io/a?q=1&q=2").raw_query`, "q=1&q=2"},
		{`url.host("http://good.com@evil.com/")`, "evil.com"},
		{`url.host("http://evil.com\\@good.com")`, "evil.com"},
		{`url.host("example.com/path")`, "example.com"},
		{`url.host("localhost:8080/x")`, "localhost"},
		{`url.host("  https://x.io/ ")`, "x.io"},
		{`url.host("https://[::1]:80/")`, "::1"},
		{`url.host("http://[::1")`, ""},
		{`url.host("mailto:a@b.com")`, ""},
	}
	for _, tc := range str {
		assert.Equal(t, types.String(tc.want), evalIn(t, env, s, tc.expr, nil), tc.expr)
	}
	bools := []struct {
		expr string
		want bool
	}{
		{`url.parse("https://x.io/a?q=1&q=2").query.q == ["1", "2"]`, true},
		{`url.parse("http://[::1").ok`, false},
		{`url.parse("https://x.io").ok`, true},
		{`url.hostMatches("https://api.github.com/x", "*.github.com")`, true},
		{`url.hostMatches("https://a.b.github.com/x", "*.github.com")`, true},
		{`url.hostMatches("https://github.com/x", "*.github.com")`, false},
		{`url.hostMatches("https://github.com/x", "github.com")`, true},
		{`url.hostMatches("https://GitHub.COM./x", "github.com")`, true},
		{`url.hostMatches("https://github.com.evil.io", ["github.com", "*.github.com"])`, false},
		{`url.hostMatches("https://evilgithub.com", "*.github.com")`, false},
		{`url.hostMatches("http://good.com@evil.com", "good.com")`, false},
		{`url.hostMatches("api.github.com", "*.github.com")`, true},
		{`url.hostMatches("https://x.io", "*")`, true},
		{`url.hostMatches("http://[::1", "*")`, false},
		{`url.hostMatches("http://127.0.0.1:8080/", "127.0.0.1")`, true},
	}
	for _, tc := range bools {
		assert.Equal(t, tc.want, evalBool(t, env, s, tc.expr, nil), tc.expr)
	}
	for _, bad := range []string{"", "https://x.io", "x.io/path", "a.*.io", "*x.io", "x.io:443", "bad_label-.io", "a..b"} {
		assert.Error(t, validateDomainPattern(bad), bad)
	}
	for _, good := range []string{"*", "x.io", "*.x.io", "X.IO.", "127.0.0.1", "::1", "[::1]", "my_host"} {
		assert.NoError(t, validateDomainPattern(good), good)
	}
	// A pattern that arrives at runtime is checked at runtime.
	prg := compile(t, env, `url.hostMatches("https://x.io", p)`)
	_, _, err := prg.Eval(map[string]any{"p": "https://x.io"})
	assert.Error(t, err)
}

const (
	testGitHubToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	testJWT         = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	testPrivateKey  = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
)

func TestSecretsGo(t *testing.T) {
	cases := []struct {
		text  string
		kinds []string
		red   string
	}{
		{"key=AKIAIOSFODNN7EXAMPLE", []string{"aws_access_key"}, "key=[REDACTED:aws_access_key]"},
		{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", []string{"aws_secret_key"},
			"aws_secret_access_key = [REDACTED:aws_secret_key]\n"},
		{"token " + testGitHubToken, []string{"github_token"}, "token [REDACTED:github_token]"},
		{"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", []string{"github_token"}, "[REDACTED:github_token]"},
		{"GITLAB=glpat-abcdefghij0123456789", []string{"gitlab_token"}, "GITLAB=[REDACTED:gitlab_token]"},
		{"slack xoxb-123456789012-abcdefghij", []string{"slack_token"}, "slack [REDACTED:slack_token]"},
		{"https://hooks.slack.com/services/T000/B000/XXXXXXXX", []string{"slack_webhook"}, "[REDACTED:slack_webhook]"},
		{"a\n" + testPrivateKey + "\nb", []string{"private_key"}, "a\n[REDACTED:private_key]\nb"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow", []string{"private_key"}, "[REDACTED:private_key]"},
		{"jwt=" + testJWT, []string{"jwt"}, "jwt=[REDACTED:jwt]"},
		{"Authorization: Bearer abcdef123456", []string{"authorization"}, "Authorization: Bearer [REDACTED:authorization]"},
		{`{"authorization": "Bearer ` + testJWT + `"}`, []string{"authorization"}, `{"authorization": "Bearer [REDACTED:authorization]"}`},
		{"curl -H 'bearer abcdefghijklmnopqrstuvwxyz'", []string{"authorization"}, "curl -H 'bearer [REDACTED:authorization]'"},
		{"nothing here", nil, "nothing here"},
		{"AKIA short", nil, "AKIA short"},
		{"", nil, ""},
		{"é AKIAIOSFODNN7EXAMPLE and " + testGitHubToken, []string{"aws_access_key", "github_token"},
			"é [REDACTED:aws_access_key] and [REDACTED:github_token]"},
	}
	for _, tc := range cases {
		var kinds []string
		for _, f := range FindSecrets(tc.text) {
			kinds = append(kinds, f.Kind)
		}
		assert.Equal(t, tc.kinds, kinds, "FindSecrets(%q)", tc.text)
		assert.Equal(t, tc.red, RedactSecrets(tc.text), "RedactSecrets(%q)", tc.text)
	}
}

func TestSecretsThroughCEL(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	s := l.NewCallScope()
	text := "é key=AKIAIOSFODNN7EXAMPLE"
	vars := map[string]any{"text": text}
	assert.True(t, evalBool(t, env, s, `secrets.has(text)`, vars))
	assert.True(t, evalBool(t, env, s, `secrets.find(text)[0].kind == "aws_access_key"`, vars))
	assert.True(t, evalBool(t, env, s, `text.substring(secrets.find(text)[0].start, secrets.find(text)[0].end) == "AKIAIOSFODNN7EXAMPLE"`, vars))
	assert.True(t, evalBool(t, env, s, `secrets.find(text)[0].preview == "AKIA****"`, vars))
	assert.True(t, evalBool(t, env, s, `secrets.redact(text) == "é key=[REDACTED:aws_access_key]"`, vars))
	assert.True(t, evalBool(t, env, s, `secrets.find("nothing here") == [] && !secrets.has("nothing here")`, nil))
	assert.Equal(t, 2, s.scans, "one scan per distinct text in a scope")
	both := testPrivateKey + "\n" + testJWT
	fs := FindSecrets(both)
	require.Len(t, fs, 2)
	for _, f := range fs {
		p := preview(both[f.Start:f.End])
		assert.LessOrEqual(t, len(p), 8, "a preview never shows more than four characters")
	}
}

// TestLiteralValidation: bad literal globs and domain patterns are compile
// errors reported at the literal, which CutInvalidLiteral recognises.
func TestLiteralValidation(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	bad := []struct{ expr, lit string }{
		{`glob.match(p, "src/[a")`, `"src/[a"`},
		{`glob.matchName(p, "[")`, `"["`},
		{`glob.matchAny(p, ["**/.env", "src/[a"])`, `"src/[a"`},
		{`url.hostMatches(p, "https://x.io/")`, `"https://x.io/"`},
		{`url.hostMatches(p, ["x.io", "a.*.io"])`, `"a.*.io"`},
		{`true &&
   glob.match(p, "{a")`, `"{a"`},
	}
	for _, tc := range bad {
		_, iss := env.Compile(tc.expr)
		require.Error(t, iss.Err(), tc.expr)
		errs := iss.Errors()
		require.Len(t, errs, 1, tc.expr)
		loc := errs[0].Location
		src := strings.Split(tc.expr, "\n")[loc.Line()-1]
		assert.True(t, strings.HasPrefix(src[loc.Column():], tc.lit),
			"%s: error at %d:%d (%q), want the literal %s", tc.expr, loc.Line(), loc.Column(), src[loc.Column():], tc.lit)
		msg, tagged := CutInvalidLiteral(errs[0].Message)
		assert.True(t, tagged, "%s: CutInvalidLiteral does not recognise %q", tc.expr, errs[0].Message)
		fn, _, _ := strings.Cut(msg, ": ")
		assert.Contains(t, tc.expr, fn+"(", "%s: the message %q does not begin with the function", tc.expr, msg)
	}
	// Other issues are not the validators'.
	for _, other := range []string{`glob.match(p)`, `invalid_literal`, `url.hostMatches(p, 1)`} {
		_, iss := env.Compile(other)
		require.Error(t, iss.Err(), other)
		for _, e := range iss.Errors() {
			_, tagged := CutInvalidLiteral(e.Message)
			assert.False(t, tagged, "%s: %q", other, e.Message)
		}
	}
	for _, ok := range []string{`glob.match(p, "src/**/*.go")`, `glob.match(p, p)`, `url.hostMatches(p, ["*.x.io", p])`} {
		_, iss := env.Compile(ok)
		assert.NoError(t, iss.Err(), ok)
	}
}

package benchdata

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/celguard/celguard/eval"
)

// SessionCall is one tool call of a recorded-like agent session and the
// result the tool gave.
type SessionCall struct {
	Call   eval.Call
	Result eval.Result
}

// SessionLen is the number of calls of Session.
const SessionLen = 200

// Session returns a realistic Claude Code session of SessionLen calls in
// the proportions of a coding session: reads (26%), greps and globs (17%),
// edits and writes (18%), shell commands (30%: short ones like `git status`,
// medium pipelines of 100-250 bytes, long ones over 2 KB such as a heredoc
// or a commit message), web fetches and searches (6%), todo updates (3%).
// Every call has the result the tool would give: file contents of 1-12 KB,
// grep lines, build and test output, web pages of a few kB. The session is
// benign (nothing in it is blocked by the recommended bundle), and two
// results carry a credential (a configuration file with an AWS key, a
// debugging dump with a bearer token), as real sessions sometimes do. The
// same call gives the same session.
func Session() []SessionCall {
	r := rand.New(rand.NewPCG(19, 2026))
	out := make([]SessionCall, 0, SessionLen)
	const cwd = "/srv/app"
	call := func(tool string, args map[string]any, content string) {
		out = append(out, SessionCall{Call: eval.Call{Tool: tool, Args: args, Cwd: cwd}, Result: eval.Result{Content: content}})
	}
	for i := 0; len(out) < SessionLen; i++ {
		file := sessionFiles[r.IntN(len(sessionFiles))]
		x := r.Float64()
		switch {
		case x < 0.26:
			call("Read", map[string]any{"file_path": cwd + "/" + file}, sourceText(r, 1+r.IntN(12)))
		case x < 0.38:
			pat := sessionWords[r.IntN(len(sessionWords))]
			call("Grep", map[string]any{"pattern": pat, "path": cwd, "output_mode": "content", "-n": true}, grepOutput(r, pat))
		case x < 0.43:
			dir := sessionDirs[i%len(sessionDirs)]
			call("Glob", map[string]any{"pattern": dir + "**/*.go", "path": cwd}, strings.Join(sessionFiles[r.IntN(5):], "\n"+dir))
		case x < 0.56:
			call("Edit", map[string]any{"file_path": cwd + "/" + file, "old_string": sourceLine(r), "new_string": sourceLine(r) + "\n" + sourceLine(r)},
				"The file "+cwd+"/"+file+" has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"+sourceText(r, 1)[:600])
		case x < 0.61:
			call("Write", map[string]any{"file_path": cwd + "/" + file, "content": sourceText(r, 2+r.IntN(4))}, "File created successfully at: "+cwd+"/"+file)
		case x < 0.83:
			cmd := sessionShort[r.IntN(len(sessionShort))]
			call("Bash", map[string]any{"command": cmd, "description": "Run " + strings.Fields(cmd)[0]}, commandOutput(r, 1+r.IntN(40)))
		case x < 0.89:
			cmd := sessionMedium[r.IntN(len(sessionMedium))]
			call("Bash", map[string]any{"command": cmd, "description": "Build and test"}, commandOutput(r, 5+r.IntN(60)))
		case x < 0.91:
			call("Bash", map[string]any{"command": longCommand(r), "description": "Commit the change"}, commandOutput(r, 3))
		case x < 0.94:
			call("WebFetch", map[string]any{"url": "https://pkg.go.dev/" + sessionWords[r.IntN(len(sessionWords))], "prompt": "Summarise the API"}, webPage(r))
		case x < 0.97:
			call("WebSearch", map[string]any{"query": "golang " + sessionWords[r.IntN(len(sessionWords))] + " example"}, webPage(r))
		default:
			call("TodoWrite", map[string]any{"todos": []any{
				map[string]any{"content": "Fix the failing test", "status": "in_progress", "activeForm": "Fixing the failing test"},
				map[string]any{"content": "Run the linters", "status": "pending", "activeForm": "Running the linters"},
			}}, "Todos have been modified successfully.")
		}
	}
	// Two results carry credentials.
	out[17].Result.Content += "\n[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
	out[121].Result.Content += "\n> GET /v1/items HTTP/1.1\n> Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n"
	return out
}

var sessionFiles = []string{
	"main.go", "internal/server/server.go", "internal/server/server_test.go", "internal/store/store.go",
	"internal/store/migrate.go", "cmd/app/main.go", "README.md", "go.mod", "Makefile", "docs/api.md",
	"internal/auth/token.go", "internal/auth/token_test.go", "web/src/App.tsx", "web/package.json",
}

var sessionDirs = []string{"", "internal/", "internal/server/", "internal/store/", "cmd/", "internal/auth/", "web/", "docs/", "internal/*/", "cmd/app/", "test/", "scripts/"}

var sessionWords = []string{"handleRequest", "NewServer", "context.Context", "TODO", "func Test", "sql.Open", "retry", "json:\"id\"", "ErrNotFound", "mutex"}

var sessionShort = []string{
	"git status", "git diff --stat", "go build ./...", "go test ./...", "go vet ./...", "ls -la", "git log --oneline -10",
	"make lint", "npm test", "git diff internal/server/server.go", "pwd", "go mod tidy", "cat go.mod", "which golangci-lint",
}

var sessionMedium = []string{
	"cd /srv/app && go build ./... && go test -run 'TestServer|TestStore' -count=1 ./internal/... 2>&1 | tail -40",
	"grep -rn \"ErrNotFound\" --include='*.go' internal/ | grep -v _test.go | head -20",
	"find . -name '*.go' -newer go.mod -not -path './vendor/*' | xargs gofmt -l",
	"git add internal/server/server.go internal/server/server_test.go && git commit -m 'server: retry transient store errors'",
	"npm --prefix web run build 2>&1 | tail -20 && ls -la web/dist",
	"go test -race -coverprofile=/tmp/cover.out ./internal/store/ && go tool cover -func=/tmp/cover.out | tail -5",
	"for f in internal/*/; do echo \"== $f\"; go test -count=1 \"./$f\" 2>&1 | tail -3; done",
}

// longCommand is a command over 2 KB: a commit with a long message or a
// file written through a heredoc.
func longCommand(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteString("git commit -m \"$(cat <<'EOF'\nserver: retry transient store errors\n\n")
		for b.Len() < 2200 {
			b.WriteString(sourceLine(r) + "\n")
		}
		b.WriteString("EOF\n)\"")
		return b.String()
	}
	b.WriteString("cat > /srv/app/internal/store/fixtures.sql <<'EOF'\n")
	for i := 0; b.Len() < 2200; i++ {
		fmt.Fprintf(&b, "INSERT INTO items (id, name, owner) VALUES (%d, 'item-%d', 'user-%d');\n", i, i, r.IntN(100))
	}
	b.WriteString("EOF")
	return b.String()
}

var sourceLines = []string{
	"func (s *Server) handleRequest(ctx context.Context, w http.ResponseWriter, req *http.Request) error {",
	"\tif err := s.store.Get(ctx, id, &item); err != nil {",
	"\t\treturn fmt.Errorf(\"get item %s: %w\", id, err)",
	"\t}",
	"\tdefer s.mu.Unlock()",
	"// retry calls fn until it succeeds, the context ends or attempts run out.",
	"\tfor attempt := 0; attempt < maxAttempts; attempt++ {",
	"\t\tlog.Printf(\"attempt %d failed: %v\", attempt, err)",
	"type Item struct {\n\tID    string `json:\"id\"`\n\tName  string `json:\"name\"`\n}",
	"\treturn nil",
	"}",
	"import (\n\t\"context\"\n\t\"database/sql\"\n\t\"errors\"\n)",
}

func sourceLine(r *rand.Rand) string { return sourceLines[r.IntN(len(sourceLines))] }

// sourceText is about kb kilobytes of source code, its lines numbered as
// Claude Code's Read shows them.
func sourceText(r *rand.Rand, kb int) string {
	var b strings.Builder
	for n := 1; b.Len() < kb*1024; n++ {
		fmt.Fprintf(&b, "%6d\t%s\n", n, sourceLine(r))
	}
	return b.String()
}

func grepOutput(r *rand.Rand, pat string) string {
	var b strings.Builder
	for i, n := 0, 1+r.IntN(25); i < n; i++ {
		fmt.Fprintf(&b, "%s:%d:\t%s // %s\n", sessionFiles[r.IntN(len(sessionFiles))], 1+r.IntN(400), sourceLine(r), pat)
	}
	return b.String()
}

var outputLines = []string{
	"ok  \texample.com/app/internal/server\t0.412s",
	"ok  \texample.com/app/internal/store\t1.093s",
	"--- PASS: TestServerRetries (0.01s)",
	"On branch main\nChanges not staged for commit:\n\tmodified:   internal/server/server.go",
	"-rw-r--r--  1 dev dev  4096 Nov 20 10:12 server.go",
	"internal/server/server.go:42:2: declared and not used: attempt",
	"3f2a1c9 server: retry transient store errors",
	"PASS\ncoverage: 81.2% of statements",
}

func commandOutput(r *rand.Rand, lines int) string {
	var b strings.Builder
	for range lines {
		b.WriteString(outputLines[r.IntN(len(outputLines))] + "\n")
	}
	return b.String()
}

func webPage(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("# Package documentation\n\n")
	for b.Len() < 2048+r.IntN(4096) {
		b.WriteString("The function returns an error when the context is cancelled before the operation completes. ")
		b.WriteString("See https://pkg.go.dev/context for details on deadlines and cancellation.\n")
	}
	return b.String()
}

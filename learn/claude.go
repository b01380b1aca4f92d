package learn

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib/shell"
)

// Claude Code's "don't ask again" records are the rules it writes to the
// permissions.allow list of a settings file (.claude/settings.local.json
// for the project, ~/.claude/settings.json for the user) when the person
// chooses "Yes, and don't ask again". They are rules the person chose, not
// calls, and learn keeps their reach but never more, in celguard's
// stricter reading:
//
//   - Bash(words:*) (a prefix): one command, at top level, whose words
//     start with those words, without wrappers, assignments, redirections,
//     substitutions, pipes or &;
//   - Bash(command) (exact): that command, as an approved call;
//   - WebFetch(domain:HOST): fetches of that host;
//   - Read(PATH), Edit(PATH), Write(PATH): that file (an approved call), or
//     DIR/** the files under that directory;
//   - a whole tool (WebSearch, mcp__server__tool): that tool.
//
// A whole shell, file or fetch tool, a wildcard pattern and an MCP server
// pattern are not narrow: they are skipped with a note (`celguard import
// claude` imports them as they are). The project of a settings file in a
// .claude directory is the directory holding it, which the rules are bound
// to (cwd); the user's settings (in ~/.claude) bind none.

// Pattern is a rule a person chose in Claude Code.
type Pattern struct {
	// Text is the rule as written, e.g. Bash(npm install:*).
	Text string `json:"text"`
	// Kind is prefix (Words), host (Host), dir (Dir) or tool.
	Kind string `json:"kind"`
	// Words are the words a command starts with (prefix).
	Words []string `json:"words,omitempty"`
	// Host is the host fetched (host).
	Host string `json:"host,omitempty"`
	// Dir is the absolute directory whose files the tool may use (dir).
	Dir string `json:"dir,omitempty"`
}

// Pattern kinds.
const (
	patternPrefix = "prefix"
	patternHost   = "host"
	patternDir    = "dir"
	patternTool   = "tool"
)

// fileTools are Claude Code's tools that take a file_path.
var claudeFileTools = map[string]bool{"Read": true, "Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// ReadClaudeSettings reads the approvals of a Claude Code settings file:
// the rules of its permissions.allow list.
func ReadClaudeSettings(name string, data []byte) ([]Approval, policy.Diagnostics) {
	rules, ds := importer.ClaudeRules(importer.File{Name: name, Data: data})
	var keep policy.Diagnostics
	for _, d := range ds {
		// Keys the import does not use say nothing about approvals.
		if d.Severity == policy.SeverityError {
			d.Code = claudeCode(d.Code)
			keep = append(keep, d)
		}
	}
	if keep.HasErrors() {
		return nil, keep
	}
	project := claudeProject(name)
	var apps []Approval
	for _, r := range rules {
		if r.List != "allow" {
			continue
		}
		app, why := claudeApproval(r, project)
		if why != "" {
			keep = append(keep, noteAt(CodeSkipped, r.Pos, "%s: %s", r.Text, why))
			continue
		}
		app.Source, app.Pos = FromClaude, r.Pos
		apps = append(apps, app)
	}
	return apps, keep
}

// claudeCode maps the import's codes to learn's.
func claudeCode(c policy.Code) policy.Code {
	if c == importer.CodeSyntax {
		return CodeSyntax
	}
	return CodeInvalid
}

// claudeProject is the project directory a settings file belongs to: the
// directory holding its .claude directory, unless that is the home
// directory (the user's settings); "" when none.
func claudeProject(name string) string {
	abs, err := filepath.Abs(name)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	if filepath.Base(dir) != ".claude" {
		return ""
	}
	project := filepath.Dir(dir)
	if home, err := os.UserHomeDir(); err == nil && filepath.Clean(home) == project {
		return ""
	}
	return filepath.ToSlash(project)
}

// claudeApproval turns an allow rule into an approval, or says why not.
func claudeApproval(r importer.ClaudeRule, project string) (Approval, string) {
	app := Approval{Call: Call{Tool: r.Tool, Cwd: project}}
	pat := &Pattern{Text: r.Text}
	switch {
	case r.Tool == "Bash" && r.Spec == "":
		return app, "a whole shell tool is not a narrow rule"
	case r.Tool == "Bash":
		if prefix, ok := importer.ClaudeBashPrefix(r.Spec); ok {
			words, ok := plainWords(prefix)
			if !ok {
				return app, "the prefix is not plain words of one command"
			}
			pat.Kind, pat.Words = patternPrefix, words
			app.Pattern = pat
			return app, ""
		}
		if importer.ClaudeHasWildcard(r.Spec) {
			return app, "a wildcard pattern is not learnt (celguard import claude imports it as it is)"
		}
		app.Args = map[string]any{"command": r.Spec}
		return app, ""
	case r.Tool == "WebFetch":
		host, ok := strings.CutPrefix(r.Spec, "domain:")
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if !ok || !plainHost(host) {
			return app, "only WebFetch(domain:HOST) of one host is learnt"
		}
		pat.Kind, pat.Host = patternHost, host
		app.Pattern = pat
		return app, ""
	case claudeFileTools[r.Tool]:
		if r.Spec == "" {
			return app, "a whole file tool is not a narrow rule"
		}
		p, ok := claudePath(r.Spec, project)
		if !ok {
			return app, "only a file, or DIR/** under the project, the home or /, is learnt"
		}
		if dir, isDir := strings.CutSuffix(p, "/**"); isDir {
			if hasGlob(dir) || dir == "" {
				return app, "only a file, or DIR/** under the project, the home or /, is learnt"
			}
			pat.Kind, pat.Dir = patternDir, dir
			app.Pattern = pat
			return app, ""
		}
		if hasGlob(p) {
			return app, "a glob pattern is not learnt (celguard import claude imports it as it is)"
		}
		app.Args = map[string]any{"file_path": p}
		return app, ""
	case r.Spec != "":
		return app, "a specifier of " + r.Tool + " is not learnt"
	case strings.Contains(r.Tool, "*") || strings.HasPrefix(r.Tool, "mcp__") && strings.Count(r.Tool, "__") < 2:
		return app, "a whole MCP server is not a narrow rule"
	}
	pat.Kind = patternTool
	app.Pattern = pat
	return app, ""
}

// claudePath is the absolute path a file rule's specifier names: //abs,
// ~/home, /project-relative, or relative to the project.
func claudePath(spec, project string) (string, bool) {
	switch {
	case strings.HasPrefix(spec, "//"):
		return cleanSlash(spec[1:]), true
	case strings.HasPrefix(spec, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		return cleanSlash(filepath.ToSlash(home) + spec[1:]), true
	case project == "":
		return "", false
	case strings.HasPrefix(spec, "/"):
		return cleanSlash(project + spec), true
	}
	return cleanSlash(project + "/" + spec), true
}

// cleanSlash cleans a slash path, keeping a trailing /**.
func cleanSlash(p string) string {
	if d, ok := strings.CutSuffix(p, "/**"); ok {
		return filepath.ToSlash(filepath.Clean(d)) + "/**"
	}
	return filepath.ToSlash(filepath.Clean(p))
}

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[]{}") }

// plainHost reports whether s is a host name: letters, digits, - and dots.
func plainHost(s string) bool {
	if s == "" || strings.HasPrefix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// plainWords parses text as one simple command of literal words, without
// wrappers, assignments or redirections, and returns its words.
func plainWords(text string) ([]string, bool) {
	c, ok := simpleCommand(text)
	if !ok {
		return nil, false
	}
	return c.Argv, true
}

// simpleCommand parses text as one top-level simple command of literal
// words, without wrappers, assignments, redirections or &.
func simpleCommand(text string) (*shell.Command, bool) {
	if strings.ContainsAny(text, "\n\r\x00") {
		return nil, false
	}
	l := shell.Parse(text)
	if !l.OK || l.Opaque || len(l.Commands) != 1 {
		return nil, false
	}
	c := l.Commands[0]
	if c.Depth != 0 || c.Via != "" || len(c.Wrappers) > 0 || len(c.Redirects) > 0 || len(c.Env) > 0 || c.Background || len(c.Argv) == 0 || c.Program == "" {
		return nil, false
	}
	for _, d := range c.ArgvDynamic {
		if d {
			return nil, false
		}
	}
	return c, true
}

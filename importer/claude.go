package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/policy"
)

// Claude Code settings (settings.json, settings.local.json, managed
// settings): permissions.deny, .ask and .allow, lists of rules `Tool` or
// `Tool(specifier)`. Claude Code tries deny, then ask, then allow; the
// first list with a matching rule decides (rule specificity does not
// change the order); the lists of every settings file given are merged.
//
//	Bash(npm run build)      the (sub)command exactly
//	Bash(npm run test:*)     legacy prefix: the prefix alone or followed by a space
//	Bash(git * main)         wildcards: * is any text (\* a literal star); a
//	                         single trailing " *" also matches the bare prefix
//	Read(//abs/**), Read(~/x), Read(/from-root), Read(rel/*.env)
//	                         gitignore patterns: from /, from the home
//	                         directory, from the settings' project, from the
//	                         working directory
//	Edit(path)               the same, for every tool that edits files
//	WebFetch(domain:host)    fetches of that host
//	mcp__server, mcp__server__*, mcp__server__tool
//	Tool, Tool(*)            every use of the tool
//
// Claude Code splits a compound Bash command and matches each subcommand:
// a deny or ask matches when any subcommand does, an allow only when every
// one does. The import does the same over celguard's parse of the command
// (shell.commands), with these differences, each never looser:
//   - deny and ask patterns are tried on each command's source text, on its
//     words after wrappers and assignments (so `sudo rm -rf /` and
//     `FOO=1 rm -rf /` match `Bash(rm -rf *)`), and on the whole line;
//   - an allow holds only for a line of plain or quoted words and && || ; |
//     whose every command is at top level, without wrappers, assignments,
//     redirections, `&` or non-literal words, and matches an allow rule.

// claudeSetting is one rule string and where it is.
type claudeSetting struct {
	list string // deny, ask, allow
	text string
	pos  policy.Pos
}

// claudeSettings reads the permissions lists of a settings file, with the
// position of every rule, and notes on the keys the import does not use.
func claudeSettings(f File) ([]claudeSetting, policy.Diagnostics) {
	var ds policy.Diagnostics
	lines := lineStarts(f.Data)
	at := func(off int64) policy.Pos { return offsetPos(f.Name, lines, f.Data, off) }
	if !json.Valid(f.Data) {
		var se *json.SyntaxError
		err := json.Unmarshal(f.Data, new(any))
		off := int64(0)
		if errors.As(err, &se) {
			off = se.Offset - 1
		}
		return nil, policy.Diagnostics{diag(CodeSyntax, policy.SeverityError, at(max(off, 0)), "not JSON: %v", err)}
	}
	dec := json.NewDecoder(bytes.NewReader(f.Data))
	dec.UseNumber()
	var out []claudeSetting
	// walk reads one value at path, recording the permission lists.
	var walk func(path []string) error
	walk = func(path []string) error {
		start := tokenStart(f.Data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				for dec.More() {
					kstart := tokenStart(f.Data, dec.InputOffset())
					k, err := dec.Token()
					if err != nil {
						return err
					}
					key, _ := k.(string)
					if len(path) == 1 && path[0] == "permissions" {
						switch key {
						case "allow", "ask", "deny":
						case "defaultMode":
							ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(kstart),
								"permissions.defaultMode is what Claude Code does when no rule matches; celguard leaves such calls to the rest of the policy set"))
						default:
							ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(kstart), "permissions.%s is not a permission rule list; not imported", key))
						}
					}
					if err := walk(append(path, key)); err != nil {
						return err
					}
				}
				_, err = dec.Token()
				return err
			case '[':
				isList := len(path) == 2 && path[0] == "permissions" && (path[1] == "allow" || path[1] == "ask" || path[1] == "deny")
				for dec.More() {
					istart := tokenStart(f.Data, dec.InputOffset())
					if isList {
						it, err := dec.Token()
						if err != nil {
							return err
						}
						s, ok := it.(string)
						if !ok {
							return shapeErr(istart, "a permission rule is a string")
						}
						out = append(out, claudeSetting{list: path[1], text: s, pos: at(istart)})
						continue
					}
					if err := walk(append(path, "[]")); err != nil {
						return err
					}
				}
				_, err = dec.Token()
				return err
			}
		}
		if len(path) == 2 && path[0] == "permissions" && (path[1] == "allow" || path[1] == "ask" || path[1] == "deny") {
			return shapeErr(start, "permissions.%s must be a list of rules", path[1])
		}
		return nil
	}
	if err := walk(nil); err != nil && !errors.Is(err, io.EOF) {
		ds = append(ds, walkDiag(err, at))
	}
	return out, ds
}

// shapeError is a value of the wrong shape in a settings file, at
// offset off of its data.
type shapeError struct {
	off int64
	msg string
}

func (e *shapeError) Error() string { return e.msg }

func shapeErr(off int64, format string, args ...any) error {
	return &shapeError{off: off, msg: fmt.Sprintf(format, args...)}
}

// walkDiag is the diagnostic of the error that ended a walk of a settings
// file: at the value a shapeError names, else at the start.
func walkDiag(err error, at func(int64) policy.Pos) policy.Diagnostic {
	var se *shapeError
	if errors.As(err, &se) {
		return diag(CodeInvalid, policy.SeverityError, at(se.off), "%s", se.msg)
	}
	return diag(CodeInvalid, policy.SeverityError, at(0), "%s", err.Error())
}

// tokenStart skips the whitespace, commas and colons before the next token.
func tokenStart(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.ContainsRune(" \t\r\n,:", rune(data[off])) {
		off++
	}
	return off
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func offsetPos(file string, starts []int, data []byte, off int64) policy.Pos {
	line := 0
	for line+1 < len(starts) && int64(starts[line+1]) <= off {
		line++
	}
	col := len([]rune(string(data[starts[line]:min(int(off), len(data))]))) + 1
	return policy.Pos{File: file, Line: line + 1, Col: col}
}

// claudeRule is one parsed permission rule.
type claudeRule struct {
	claudeSetting
	tool string
	spec string // "" for the whole tool
	has  bool   // a specifier was written
}

var claudeRuleRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([^()]+?)(?:\((.*)\))?$`) })

// claudeToolName is what the import takes for a tool name: Claude Code's
// tools and MCP tools, and mcp__server__* (a glob celguard reads alike).
var claudeToolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[A-Za-z0-9_-]+|mcp__[A-Za-z0-9_-]+__\*)$`) })

func parseClaudeRule(s claudeSetting) (claudeRule, error) {
	m := claudeRuleRE().FindStringSubmatch(strings.TrimSpace(s.text))
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return claudeRule{}, fmt.Errorf("%q is not Tool or Tool(specifier)", s.text)
	}
	r := claudeRule{claudeSetting: s, tool: strings.TrimSpace(m[1]), spec: m[2], has: strings.Contains(s.text, "(")}
	if !claudeToolName().MatchString(r.tool) {
		return claudeRule{}, fmt.Errorf("%q is not a tool name (letters, digits, _ and -, or an mcp__server__* pattern)", r.tool)
	}
	if r.has && (r.spec == "" || r.spec == "*") {
		r.spec, r.has = "", false // Tool() and Tool(*) are the whole tool
	}
	return r, nil
}

// claudeBashRegexp is the regular expression Claude Code matches a
// subcommand against for a Bash rule's specifier (exact, legacy prefix
// "x:*", or wildcard), anchored, in RE2.
func claudeBashRegexp(spec string) string {
	if m := regexp.MustCompile(`^(.+):\*$`).FindStringSubmatch(spec); m != nil {
		return `^(?s)` + regexp.QuoteMeta(m[1]) + `(?:[ \t].*)?$`
	}
	if !claudeHasWildcard(spec) {
		return `^(?s)` + regexp.QuoteMeta(spec) + `$`
	}
	p := strings.TrimSpace(spec)
	var b strings.Builder
	stars := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) && (p[i+1] == '*' || p[i+1] == '\\') {
			b.WriteString(regexp.QuoteMeta(string(p[i+1])))
			i++
			continue
		}
		if c == '*' {
			stars++
			b.WriteString(".*")
			continue
		}
		b.WriteString(regexp.QuoteMeta(string(c)))
	}
	re := b.String()
	if stars == 1 && strings.HasSuffix(re, " .*") {
		re = strings.TrimSuffix(re, " .*") + "(?: .*)?"
	}
	return `^(?s)` + re + `$`
}

func claudeHasWildcard(p string) bool {
	if strings.HasSuffix(p, ":*") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '*' {
			n := 0
			for j := i - 1; j >= 0 && p[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				return true
			}
		}
	}
	return false
}

// The tools each kind of file rule covers: exactly for an allow, every
// tool of the class for a deny or an ask (Claude Code applies Read rules
// "on a best-effort basis" to the tools that read, which the import makes
// sure of).
var (
	claudeEditTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	claudeReadTools = []string{"Read"}
)

// claudeGlobs converts a gitignore-style path pattern to the celguard
// expression of the doublestar globs an absolute path is matched against
// (the pattern and everything under it), or an error for what the import
// cannot express. anchoredAnywhere is true when the pattern's base is the
// settings' project, which the import does not know.
func claudeGlobs(spec string, strict bool) (base, pattern string, err error) {
	if strings.HasPrefix(spec, "!") {
		return "", "", errors.New("a negated (!) path pattern has no celguard form")
	}
	esc := strings.NewReplacer("{", `\{`, "}", `\}`)
	switch {
	case strings.HasPrefix(spec, "//"):
		return `"/"`, esc.Replace(strings.TrimPrefix(spec, "//")), nil
	case strings.HasPrefix(spec, "~/"):
		return `path.expand("~")`, esc.Replace(strings.TrimPrefix(spec, "~/")), nil
	case strings.HasPrefix(spec, "/"):
		return "", esc.Replace(strings.TrimPrefix(spec, "/")), nil
	}
	p := strings.TrimPrefix(spec, "./")
	trimmed := strings.TrimSuffix(p, "/")
	if strict && !strings.Contains(trimmed, "/") && !strings.HasPrefix(trimmed, "**") {
		// gitignore: a name without a slash matches at any depth. A deny
		// or ask takes it so; an allow only in the working directory
		// itself, never looser whichever Claude Code's version does.
		p = "**/" + p
	}
	return "cwd", esc.Replace(p), nil
}

func importClaude(files []File) (*doc, policy.Diagnostics) {
	var ds policy.Diagnostics
	var rules []claudeRule
	for _, f := range files {
		settings, sds := claudeSettings(f)
		ds = append(ds, sds...)
		for _, s := range settings {
			r, err := parseClaudeRule(s)
			if err != nil {
				ds = append(ds, diag(CodeInvalid, policy.SeverityError, s.pos, "%v", err))
				continue
			}
			rules = append(rules, r)
		}
	}
	if ds.HasErrors() {
		return nil, ds
	}
	d := &doc{name: "claude-code-permissions", description: "Claude Code permission rules, imported: deny, then ask, then allow."}
	var allowBash []string
	for _, r := range rules {
		if r.tool == "Bash" && r.has && r.list == "allow" {
			allowBash = append(allowBash, fmt.Sprintf("c.text.matches(%q)", claudeBashRegexp(r.spec)))
		}
	}
	if len(allowBash) > 0 {
		safe := "c.depth == 0 && c.wrappers.size() == 0 && c.env.size() == 0 && c.redirects.size() == 0 && !c.background && !c.dynamic && c.via == \"\""
		d.variables = append(d.variables, variable{"claude_all_allowed",
			fmt.Sprintf("command.matches(%q) && shell.parse(command).ok && !shell.parse(command).opaque && shell.commands(command).size() > 0 && shell.commands(command).all(c, %s && (%s))",
				codexPlain, safe, strings.Join(allowBash, " || "))})
	}
	for i, r := range rules {
		verdict := map[string]string{"deny": "block", "ask": "ask", "allow": "allow"}[r.list]
		cr := rule{
			id:       sanitizeID(fmt.Sprintf("claude-%s-%s-%d", r.list, r.tool, i+1)),
			priority: priorityOf(verdict),
			verdict:  verdict,
			reason:   fmt.Sprintf("Claude Code permission rule %s (%s)", r.text, r.list),
			code:     "claude_permission",
			src:      r.pos,
			comment:  fmt.Sprintf("permissions.%s: %s", r.list, r.text),
		}
		strict := verdict != "allow"
		switch {
		case !r.has:
			cr.tools = []string{r.tool}
			switch {
			case r.tool == "Edit":
				cr.tools = claudeEditTools
			case strings.HasPrefix(r.tool, "mcp__") && strings.Count(r.tool, "__") == 1:
				cr.tools = []string{r.tool + "__*"} // mcp__server: every tool of the server
			}
		case r.tool == "Bash":
			re := claudeBashRegexp(r.spec)
			cr.tools = []string{"Bash"}
			if strict {
				cr.condition = fmt.Sprintf("command.matches(%q) || shell.commands(command).exists(c, c.text.matches(%q) || c.argv.join(\" \").matches(%q))", re, re, re)
			} else {
				cr.condition = fmt.Sprintf("claude_all_allowed && shell.commands(command).exists(c, c.text.matches(%q))", re)
			}
		case r.tool == "Read" || r.tool == "Edit":
			base, pat, err := claudeGlobs(r.spec, strict)
			if err != nil {
				if strict {
					ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "%v: the %s applies to every use of %s (stricter)", err, r.list, r.tool))
					// Claude Code refuses a write to a path a Read deny
					// covers, too.
					cr.tools = map[bool][]string{true: claudeEditTools, false: append([]string{"Read", "Grep", "Glob", "LS", "NotebookRead"}, claudeEditTools...)}[r.tool == "Edit"]
					break
				}
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "%v: the allow is left out (stricter)", err))
				continue
			}
			if strict {
				if r.tool == "Edit" {
					cr.classes = []string{"file_write"}
				} else {
					// A Read deny or ask also holds for writes: Claude
					// Code refuses to write a file a Read deny covers
					// ("covered by a Read deny rule"), seen by the
					// differential test.
					cr.classes = []string{"file_read", "search", "file_write"}
				}
				if base == "" {
					ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos,
						"a path from the settings' project (/%s) matches under every directory here (stricter): the import does not know the project", pat))
					pat, base = "**/"+pat, `"/"`
				}
				cr.condition = fmt.Sprintf("paths.exists(p, glob.matchAny(path.abs(p, cwd), [path.join(%s, %q), path.join(%s, %q)]))", base, pat, base, pat+"/**")
			} else {
				if base == "" {
					ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos,
						"a path from the settings' project (/%s): the import does not know the project, so the allow is left out (stricter)", pat))
					continue
				}
				cr.tools = map[bool][]string{true: claudeEditTools, false: claudeReadTools}[r.tool == "Edit"]
				cr.condition = fmt.Sprintf("paths.size() > 0 && paths.all(p, glob.matchAny(path.abs(p, cwd), [path.join(%s, %q), path.join(%s, %q)]))", base, pat, base, pat+"/**")
			}
		case r.tool == "WebFetch" && strings.HasPrefix(r.spec, "domain:"):
			host := strings.ToLower(strings.TrimPrefix(r.spec, "domain:"))
			cr.tools = []string{"WebFetch"}
			if strict {
				cr.condition = fmt.Sprintf(`has(args.url) && (url.host(string(args.url)) == %q || url.host(string(args.url)).endsWith(%q) || url.host(string(args.url)) == "")`, host, "."+host)
			} else {
				cr.condition = fmt.Sprintf(`has(args.url) && type(args.url) == string && url.host(string(args.url)) == %q`, host)
			}
		default:
			if strict {
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos,
					"the specifier of %s has no celguard form here: the %s applies to every use of %s (stricter)", r.text, r.list, r.tool))
				cr.tools = []string{r.tool}
				break
			}
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos,
				"the specifier of %s has no celguard form here: the allow is left out (stricter)", r.text))
			continue
		}
		d.rules = append(d.rules, cr)
	}
	d.cases = claudeCases(rules, d.rules)
	return d, ds
}

// claudeCases makes a representative call for every imported Bash, MCP,
// WebFetch and whole-tool rule, expected to get Claude Code's decision:
// the first of deny, ask, allow with a matching rule.
func claudeCases(rules []claudeRule, imported []rule) []testCase {
	bySrc := map[policy.Pos]string{}
	for _, r := range imported {
		bySrc[r.src] = r.id
	}
	var out []testCase
	seen := map[string]bool{}
	for _, r := range rules {
		if bySrc[r.pos] == "" {
			continue
		}
		var tool string
		var args map[string]any
		switch {
		case r.tool == "Bash" && r.has:
			cmd, ok := claudeSample(r.spec)
			if !ok {
				continue
			}
			tool, args = "Bash", map[string]any{"command": cmd}
		case (r.tool == "Read" || r.tool == "Edit") && r.has:
			fp, ok := claudePathSample(r.spec, r.list != "allow")
			if !ok {
				continue
			}
			tool, args = r.tool, map[string]any{"file_path": fp}
		case r.tool == "WebFetch" && r.has:
			tool, args = "WebFetch", map[string]any{"url": "https://" + strings.TrimPrefix(r.spec, "domain:") + "/page"}
		case !r.has && r.tool != "Bash" && r.tool != "Edit" && !strings.ContainsAny(r.tool, "*?[{"):
			tool, args = r.tool, map[string]any{}
			if strings.HasPrefix(r.tool, "mcp__") && strings.Count(r.tool, "__") == 1 {
				tool = r.tool + "__sample_tool"
			}
		default:
			continue
		}
		key := tool + fmt.Sprint(args)
		if seen[key] {
			continue
		}
		seen[key] = true
		verdict, id := "allow", "none"
		for _, list := range []string{"deny", "ask", "allow"} {
			for _, o := range rules {
				if o.list == list && bySrc[o.pos] != "" && claudeMatches(o, tool, args) {
					verdict, id = map[string]string{"deny": "block", "ask": "ask", "allow": "allow"}[list], bySrc[o.pos]
					break
				}
			}
			if id != "none" {
				break
			}
		}
		out = append(out, testCase{name: fmt.Sprintf("%s: %s", r.text, tool), tool: tool, args: args, cwd: claudeSampleCwd, verdict: verdict, rule: id, src: r.pos})
	}
	return out
}

// claudeSample is a plain command the Bash specifier matches.
func claudeSample(spec string) (string, bool) {
	s := spec
	if m := regexp.MustCompile(`^(.+):\*$`).FindStringSubmatch(spec); m != nil {
		s = m[1] + " x"
	} else {
		s = strings.ReplaceAll(strings.ReplaceAll(s, `\*`, "\x00"), "*", "x")
		s = strings.ReplaceAll(s, "\x00", "*")
	}
	s = strings.TrimSpace(s)
	if s == "" || !regexp.MustCompile(codexPlain).MatchString(s) || !regexp.MustCompile(claudeBashRegexp(spec)).MatchString(s) {
		return "", false
	}
	return s, true
}

// claudeMatches is Claude Code's match of one rule on a sample call (a
// single plain command).
func claudeMatches(r claudeRule, tool string, args map[string]any) bool {
	if r.tool != tool && !(strings.HasSuffix(r.tool, "__*") && strings.HasPrefix(tool, strings.TrimSuffix(r.tool, "*"))) &&
		!(strings.HasPrefix(tool, r.tool+"__") && strings.HasPrefix(r.tool, "mcp__") && strings.Count(r.tool, "__") == 1) {
		return false
	}
	if !r.has {
		return true
	}
	switch tool {
	case "Read", "Edit":
		fp, _ := args["file_path"].(string)
		g, ok := claudeSampleGlob(r.spec, r.list != "allow")
		if !ok {
			return false
		}
		for _, pat := range []string{g, g + "/**"} {
			if m, _ := doublestar.Match(pat, fp); m {
				return true
			}
		}
		return false
	case "Bash":
		cmd, _ := args["command"].(string)
		return regexp.MustCompile(claudeBashRegexp(r.spec)).MatchString(cmd)
	case "WebFetch":
		return "https://"+strings.TrimPrefix(r.spec, "domain:")+"/page" == args["url"]
	}
	return false
}

// claudeSampleCwd is the working directory of the suite's calls.
const claudeSampleCwd = "/srv/app"

// claudeSampleGlob is the absolute glob a path rule matches in the suite
// (its working directory claudeSampleCwd); false for a rule whose base the
// suite cannot know (the home directory, the settings' project).
func claudeSampleGlob(spec string, strict bool) (string, bool) {
	base, pat, err := claudeGlobs(spec, strict)
	switch {
	case err != nil:
		return "", false
	case base == `"/"`:
		return "/" + pat, true
	case base == "cwd":
		return claudeSampleCwd + "/" + pat, true
	}
	return "", false
}

// claudePathSample is an absolute path the rule's pattern matches.
func claudePathSample(spec string, strict bool) (string, bool) {
	g, ok := claudeSampleGlob(spec, strict)
	if !ok {
		return "", false
	}
	p := strings.NewReplacer("**/", "", "/**", "/a", "**", "a", "*", "x", "?", "x", `\{`, "{", `\}`, "}").Replace(g)
	if strings.ContainsAny(p, "[") {
		return "", false
	}
	if m, _ := doublestar.Match(g, p); !m {
		return "", false
	}
	return p, true
}

// ClaudeRule is one rule of a Claude Code settings file's permission
// lists, as Claude Code reads it: Tool or Tool(specifier), e.g. the
// "don't ask again" rules Claude Code writes to .claude/settings.local.json.
type ClaudeRule struct {
	// List is the list it is in: allow, ask or deny.
	List string
	// Text is the rule as written.
	Text string
	// Tool is the tool name (or mcp__server__* pattern); Spec the
	// specifier, "" for the whole tool (Tool, Tool(), Tool(*)).
	Tool, Spec string
	// Pos is where the rule is written.
	Pos policy.Pos
}

// ClaudeRules reads the permission rules of a Claude Code settings file,
// in file order, with the import's grammar. A file that is not JSON, a
// list that is not a list of strings and a rule that is not Tool or
// Tool(specifier) are error diagnostics at their positions (import_syntax,
// import_invalid); keys the rules do not use are info notes.
func ClaudeRules(f File) ([]ClaudeRule, policy.Diagnostics) {
	settings, ds := claudeSettings(f)
	var out []ClaudeRule
	for _, s := range settings {
		r, err := parseClaudeRule(s)
		if err != nil {
			ds = append(ds, diag(CodeInvalid, policy.SeverityError, s.pos, "%v", err))
			continue
		}
		out = append(out, ClaudeRule{List: r.list, Text: r.text, Tool: r.tool, Spec: r.spec, Pos: r.pos})
	}
	return out, ds
}

// ClaudeBashPrefix reads a Bash specifier of the legacy prefix form
// "words:*" (Claude Code's "don't ask again" for a command): the prefix
// words; ok is false for an exact command or a wildcard pattern.
func ClaudeBashPrefix(spec string) (prefix string, ok bool) {
	p, found := strings.CutSuffix(spec, ":*")
	if !found || strings.TrimSpace(p) == "" {
		return "", false
	}
	return p, true
}

// ClaudeHasWildcard reports whether a Bash specifier holds an unescaped
// * (a wildcard pattern), other than the legacy ":*" suffix.
func ClaudeHasWildcard(spec string) bool { return claudeHasWildcard(spec) }

package importer

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/policy"
)

// Cursor CLI permissions (~/.cursor/cli-config.json, <project>/.cursor/
// cli.json; cursor.com/docs/cli/reference/permissions): permissions.allow
// and permissions.deny, lists of tokens
//
//	Shell(git)           commands whose first token is git (globs allowed)
//	Shell(curl:*)        curl with any arguments
//	Read(src/**/*.ts)    reads of matching paths (**, *, ?; relative to the workspace)
//	Write(**/.env*)      writes of matching paths
//	WebFetch(docs.x.io)  fetches of a domain (or a pattern)
//	Mcp(server:tool)     an MCP tool
//
// A deny wins over an allow; what neither names is asked. Cursor's agent is
// not open source and its documentation leaves details open, so the import
// takes the reading that is never looser: a deny matches every command of
// the line by program name (after wrappers, in nested shells), every path
// anywhere under a relative pattern, a domain's subdomains, and an MCP tool
// of any server; an allow holds only for a plain line whose every command's
// first word a Shell allow names (with `:*` or no arguments pattern), for
// paths under the working directory, and exact domains. The rules match
// the tool classes (shell, file_read, search, file_write, web, mcp), which
// name Cursor's tools among the other hosts'.

func importCursor(files []File) (*doc, policy.Diagnostics) {
	var ds policy.Diagnostics
	var rules []claudeRule
	var entries []cursorEntry
	for _, f := range files {
		if isCursorEditor(f) {
			es, eds := cursorEditorEntries(f)
			ds = append(ds, eds...)
			entries = append(entries, es...)
			continue
		}
		settings, sds := claudeSettings(f)
		for _, d := range sds {
			// The Claude Code reader's note on defaultMode does not apply.
			if d.Code == CodeIgnored {
				d.Message = strings.Replace(d.Message, "permissions.defaultMode is what Claude Code does when no rule matches; celguard leaves such calls to the rest of the policy set", "permissions.defaultMode is not a permission list; not imported", 1)
			}
			ds = append(ds, d)
		}
		for _, s := range settings {
			if s.list == "ask" {
				ds = append(ds, diag(CodeInvalid, policy.SeverityError, s.pos, "Cursor's permissions have allow and deny lists, no ask"))
				continue
			}
			r, err := parseClaudeRule(s)
			if err != nil || !r.has {
				ds = append(ds, diag(CodeInvalid, policy.SeverityError, s.pos, "%q is not a Cursor permission token Type(argument)", s.text))
				continue
			}
			rules = append(rules, r)
		}
	}
	if ds.HasErrors() {
		return nil, ds
	}
	d := &doc{name: "cursor-cli-permissions", description: "Cursor CLI permission tokens, imported: deny, then allow."}
	if len(rules) == 0 && len(entries) > 0 {
		d.name, d.description = "cursor-permissions", "Cursor's permissions.json allowlists, imported: what they name runs without approval."
	}
	var allowShell []string
	for _, r := range rules {
		if r.tool == "Shell" && r.list == "allow" {
			if re, ok := cursorShellAllow(r.spec); ok {
				allowShell = append(allowShell, fmt.Sprintf("c.argv[0].matches(%q)", re))
			}
		}
	}
	var terminal []rule
	for i, e := range entries {
		switch e.list {
		case "terminalAllowlist":
			test, ok := cursorTerminalTest(e.text)
			if !ok {
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, e.pos,
					"terminalAllowlist entry %q: only plain words have a documented reading (no quotes, expansions, operators or globs); left out (stricter)", e.text))
				continue
			}
			allowShell = append(allowShell, test)
			terminal = append(terminal, rule{
				id:        sanitizeID(fmt.Sprintf("cursor-terminal-%d", i+1)),
				priority:  priorityOf("allow"),
				classes:   []string{"shell"},
				condition: fmt.Sprintf("cursor_all_allowed && shell.commands(command).exists(c, %s)", test),
				verdict:   "allow",
				reason:    fmt.Sprintf("Cursor terminalAllowlist entry %q", e.text),
				code:      "cursor_permission",
				src:       e.pos,
				comment:   fmt.Sprintf("terminalAllowlist: %s", e.text),
			})
		case "mcpAllowlist":
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, e.pos,
				"mcpAllowlist entry %q: Cursor's hooks name an MCP tool without its server, so the allow has no exact form; left out (stricter)", e.text))
		case "autoRun.allow_instructions":
			ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, e.pos,
				"autoRun.allow_instructions steer Cursor's Auto-review classifier in plain language; left out (stricter)"))
		case "autoRun.block_instructions":
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, e.pos,
				"autoRun.block_instructions steer Cursor's Auto-review classifier in plain language and have no rule form: not imported; the calls they would hold for review get no decision from the import (write them as ask rules)"))
		}
	}
	if len(allowShell) > 0 {
		safe := "c.depth == 0 && c.wrappers.size() == 0 && c.env.size() == 0 && c.redirects.size() == 0 && !c.background && !c.dynamic && c.via == \"\""
		d.variables = append(d.variables, variable{"cursor_all_allowed",
			fmt.Sprintf("command.matches(%q) && shell.parse(command).ok && !shell.parse(command).opaque && shell.commands(command).size() > 0 && shell.commands(command).all(c, %s && (%s))",
				codexPlain, safe, strings.Join(allowShell, " || "))})
	}
	for i, r := range rules {
		verdict := map[string]string{"deny": "block", "allow": "allow"}[r.list]
		strict := verdict == "block"
		cr := rule{
			id:       sanitizeID(fmt.Sprintf("cursor-%s-%s-%d", r.list, r.tool, i+1)),
			priority: priorityOf(verdict),
			verdict:  verdict,
			reason:   fmt.Sprintf("Cursor permission %s (%s)", r.text, r.list),
			code:     "cursor_permission",
			src:      r.pos,
			comment:  fmt.Sprintf("permissions.%s: %s", r.list, r.text),
		}
		switch r.tool {
		case "Shell":
			base, _, _ := strings.Cut(r.spec, ":")
			if _, err := doublestar.Match(base, ""); err != nil || base == "" {
				ds = append(ds, diag(CodeInvalid, policy.SeverityError, r.pos, "Shell(%s): %q is not a command or a glob", r.spec, base))
				continue
			}
			cr.classes = []string{"shell"}
			if strict {
				cr.condition = fmt.Sprintf("shell.commands(command).exists(c, glob.match(c.program, %q) || glob.match(c.argv.size() > 0 ? c.argv[0] : \"\", %q))", base, base)
				if strings.Contains(r.spec, ":") && !strings.HasSuffix(r.spec, ":*") {
					ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "Shell(%s): the arguments pattern is not documented; the deny covers every %s command (stricter)", r.spec, base))
				}
				break
			}
			re, ok := cursorShellAllow(r.spec)
			if !ok {
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "Shell(%s): the arguments pattern is not documented; the allow is left out (stricter)", r.spec))
				continue
			}
			cr.condition = fmt.Sprintf("cursor_all_allowed && shell.commands(command).exists(c, c.argv[0].matches(%q))", re)
		case "Read", "Write":
			pat := strings.NewReplacer("{", `\{`, "}", `\}`).Replace(r.spec)
			if _, err := doublestar.Match(pat, ""); err != nil {
				ds = append(ds, diag(CodeInvalid, policy.SeverityError, r.pos, "%s(%s) is not a valid glob", r.tool, r.spec))
				continue
			}
			cr.classes = map[bool][]string{true: {"file_write"}, false: {"file_read", "search"}}[r.tool == "Write"]
			base := `"/"`
			if !strings.HasPrefix(pat, "/") {
				if strict {
					if !strings.HasPrefix(pat, "**/") {
						pat = "**/" + pat
					}
				} else {
					base = "cwd"
				}
			} else {
				pat = strings.TrimPrefix(pat, "/")
			}
			if strict {
				cr.condition = fmt.Sprintf("paths.exists(p, glob.matchAny(path.abs(p, cwd), [path.join(%s, %q), path.join(%s, %q)]))", base, pat, base, pat+"/**")
			} else {
				cr.condition = fmt.Sprintf("paths.size() > 0 && paths.all(p, glob.match(path.abs(p, cwd), path.join(%s, %q)))", base, pat)
			}
		case "WebFetch":
			host := strings.ToLower(r.spec)
			if _, err := doublestar.Match(host, ""); err != nil || host == "" {
				ds = append(ds, diag(CodeInvalid, policy.SeverityError, r.pos, "WebFetch(%s) is not a domain or a valid pattern", r.spec))
				continue
			}
			cr.classes = []string{"web"}
			u := `(has(args.url) && type(args.url) == string ? string(args.url) : "")`
			if strict {
				cr.condition = fmt.Sprintf(`url.host(%s) == "" || glob.match(url.host(%s), %q) || url.host(%s).endsWith(%q)`, u, u, host, u, "."+strings.TrimPrefix(host, "*."))
			} else {
				cr.condition = fmt.Sprintf(`url.host(%s) != "" && glob.match(url.host(%s), %q)`, u, u, host)
			}
		case "Mcp":
			_, tool, _ := strings.Cut(strings.ReplaceAll(r.spec, ",", ":"), ":")
			tool = strings.TrimSpace(tool)
			if !strict {
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "Mcp(%s): how Cursor names a server's tools in a hook is not documented; the allow is left out (stricter)", r.spec))
				continue
			}
			cr.classes = []string{"mcp"}
			if tool != "" && tool != "*" {
				cr.condition = fmt.Sprintf(`tool.endsWith(%q) || tool.endsWith(%q) || tool.endsWith(%q)`, ":"+tool, "__"+tool, "_"+tool)
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "Mcp(%s): the deny covers the tool %s of every server (stricter)", r.spec, tool))
			}
		default:
			if strict {
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "%s is not a documented Cursor permission type: the deny covers the tool %s (stricter)", r.text, r.tool))
				cr.tools = []string{r.tool}
				break
			}
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "%s is not a documented Cursor permission type: the allow is left out", r.text))
			continue
		}
		d.rules = append(d.rules, cr)
	}
	d.rules = append(d.rules, terminal...)
	if ds.HasErrors() {
		return nil, ds
	}
	d.cases = append(cursorCases(rules, d.rules), cursorTerminalCases(rules, entries, d.rules)...)
	return d, ds
}

// cursorShellAllow is the RE2 an allowed command's first word must match
// for Shell(base) and Shell(base:*): the base as a glob of one word.
func cursorShellAllow(spec string) (string, bool) {
	base, args, hasArgs := strings.Cut(spec, ":")
	if hasArgs && args != "*" {
		return "", false
	}
	re, err := globRegexp(base)
	if err != nil || strings.Contains(base, "**") || strings.ContainsAny(base, "{}") {
		return "", false
	}
	return re, true
}

// cursorCases makes a call for each Shell token (its base, with an
// argument) and each Read or Write token with a plain path.
func cursorCases(rules []claudeRule, imported []rule) []testCase {
	ids := map[policy.Pos]string{}
	for _, r := range imported {
		ids[r.src] = r.id
	}
	var out []testCase
	seen := map[string]bool{}
	for _, r := range rules {
		if ids[r.pos] == "" || r.tool != "Shell" {
			continue
		}
		base, _, _ := strings.Cut(r.spec, ":")
		if !regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(base) {
			continue
		}
		cmd := base + " x"
		if seen[cmd] {
			continue
		}
		seen[cmd] = true
		verdict, id := "allow", "none"
		for _, list := range []string{"deny", "allow"} {
			for _, o := range rules {
				if o.list != list || o.tool != "Shell" || ids[o.pos] == "" {
					continue
				}
				ob, oargs, has := strings.Cut(o.spec, ":")
				if m, _ := doublestar.Match(ob, base); m && (list == "deny" || !has || oargs == "*") {
					verdict, id = map[string]string{"deny": "block", "allow": "allow"}[list], ids[o.pos]
					break
				}
			}
			if id != "none" {
				break
			}
		}
		out = append(out, testCase{name: fmt.Sprintf("%s: %s", r.text, cmd), tool: "Shell", args: map[string]any{"command": cmd}, verdict: verdict, rule: id, src: r.pos})
	}
	return out
}

// cursorTerminalCases makes a call per terminal allowlist entry: the entry
// with one more argument, allowed by it unless a Shell deny names its
// program.
func cursorTerminalCases(rules []claudeRule, entries []cursorEntry, imported []rule) []testCase {
	ids := map[policy.Pos]string{}
	for _, r := range imported {
		ids[r.src] = r.id
	}
	var out []testCase
	for _, e := range entries {
		if e.list != "terminalAllowlist" || ids[e.pos] == "" {
			continue
		}
		cmd := strings.Join(strings.Fields(e.text), " ") + " x"
		verdict, id := "allow", ids[e.pos]
		for _, o := range rules {
			base, _, _ := strings.Cut(o.spec, ":")
			if m, _ := doublestar.Match(base, strings.Fields(e.text)[0]); o.list == "deny" && o.tool == "Shell" && ids[o.pos] != "" && m {
				verdict, id = "block", ids[o.pos]
				break
			}
		}
		if verdict == "allow" {
			id = cursorFirstAllow(rules, entries, ids, cmd)
		}
		out = append(out, testCase{name: fmt.Sprintf("terminalAllowlist %q: %s", e.text, cmd), tool: "Shell", args: map[string]any{"command": cmd}, verdict: verdict, rule: id, src: e.pos})
	}
	return out
}

// cursorFirstAllow is the id of the first imported allow that matches a
// plain command (same priority: document order, the CLI's tokens first).
func cursorFirstAllow(rules []claudeRule, entries []cursorEntry, ids map[policy.Pos]string, cmd string) string {
	cw := strings.Fields(cmd)
	for _, o := range rules {
		if re, ok := cursorShellAllow(o.spec); ok && o.list == "allow" && o.tool == "Shell" && ids[o.pos] != "" && regexp.MustCompile(re).MatchString(cw[0]) {
			return ids[o.pos]
		}
	}
	for _, o := range entries {
		ow := strings.Fields(o.text)
		if o.list == "terminalAllowlist" && ids[o.pos] != "" && len(ow) <= len(cw) && strings.Join(cw[:len(ow)], " ") == strings.Join(ow, " ") {
			return ids[o.pos]
		}
	}
	return "none"
}

package importer

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/celguard/celguard/policy"
)

// Gemini CLI policy files (google-gemini/gemini-cli, packages/core/src/
// policy: toml-loader.ts, policy-engine.ts), TOML:
//
//	[[rule]]
//	toolName = "run_shell_command"   # a name, a list, "*", "mcp_*", "mcp_server_*"
//	mcpName = "github"               # with toolName: mcp_github_<tool>; alone: every tool of the server
//	commandPrefix = "git status"     # or a list; run_shell_command only
//	commandRegex = "git (log|diff)"  # run_shell_command only
//	argsPattern = "\"path\":\"/etc"  # a regex over the arguments as JSON
//	decision = "allow"               # allow | deny | ask_user
//	priority = 100                   # 0..999, within the file's tier
//	modes = ["default", "autoEdit"]  # approval modes the rule holds in
//	deny_message = "..."
//
// Gemini CLI tries the rules highest priority first (tier + priority/1000)
// and the first that matches decides; a shell command is split into its
// subcommands and each is decided again, the strictest standing; a
// command no rule matches is asked (in the default approval mode).
//
// The import decides as Gemini CLI does in its default approval mode
// (rules whose modes leave it out are left out, with an info), with these
// differences, each never looser:
//   - every deny is tried before every ask, and every ask before every
//     allow, whatever their priorities (Gemini CLI lets a higher-priority
//     allow win over a lower deny on the same command);
//   - commandPrefix and commandRegex deny and ask rules are tried on each
//     command's text, its words after wrappers, and the whole line; allow
//     rules hold only for plain lines whose every command an allow rule
//     matches (as for Claude Code);
//   - argsPattern, toolAnnotations and subagent: a deny or ask applies to
//     the whole tool, an allow is left out (warnings);
//   - an allow of run_shell_command with no command pattern is left out:
//     Gemini CLI would still ask for commands its heuristics find
//     dangerous.

// geminiShellTools are Gemini CLI's shell tool names (SHELL_TOOL_NAMES).
var geminiShellTools = []string{"run_shell_command", "ShellTool"}

// geminiAliases are TOOL_LEGACY_ALIASES both ways: a rule of either name
// matches calls of both.
var geminiAliases = map[string][]string{"search_file_content": {"grep_search"}, "grep_search": {"search_file_content"}}

type geminiRule struct {
	tools       []string // celguard tool names or globs; nil: every tool
	exactTool   string   // a name holding * compared as a string
	exactTools  []string // names celguard's tool globs would not read literally
	decision    string
	priority    int
	prefixes    []string
	cmdRegex    string
	args        bool // argsPattern, toolAnnotations or subagent restrict it
	argsWhat    string
	denyMessage string
	pos         policy.Pos
	index       int
	shell       bool // the rule names only shell tools
	tier        int  // Gemini CLI's tier of the rule's file (1 default .. 5 admin)
	order       int  // the rule's place among every file's rules, for ties
}

// The approval modes of Gemini CLI (ApprovalMode in packages/core/src/
// policy/types.ts), and its tiers (packages/core/src/policy/config.ts):
// a rule's final priority is tier + priority/1000, so every rule of a
// higher tier comes before every rule of a lower one.
var (
	geminiModes = []string{"default", "autoEdit", "yolo", "plan"}
	geminiTiers = map[string]int{"default": 1, "extension": 2, "workspace": 3, "user": 4, "admin": 5}
)

// geminiTierNames are the tiers by number.
var geminiTierNames = []string{"", "default", "extension", "workspace", "user", "admin"}

// geminiFileTier is the tier Gemini CLI gives a file in its place: the
// system policies directory (/etc/gemini-cli/policies on Linux, the
// macOS and Windows equivalents) is admin, an extension's policies
// directory extension, the user's ~/.gemini/policies user, a project's
// .gemini/policies workspace; any other file is one the user names in the
// policyPaths setting or with --policy, which Gemini CLI reads in the user
// tier. home is the user's home directory ("" when unknown).
func geminiFileTier(name, home string) int {
	n := strings.ReplaceAll(name, "\\", "/")
	home = strings.TrimSuffix(strings.ReplaceAll(home, "\\", "/"), "/")
	switch {
	case strings.HasPrefix(n, "/etc/gemini-cli/policies/"),
		strings.HasPrefix(n, "/Library/Application Support/GeminiCli/policies/"),
		strings.HasPrefix(strings.ToLower(n), "c:/programdata/gemini-cli/policies/"):
		return 5
	case regexp.MustCompile(`(^|/)\.gemini/extensions/[^/]+/policies/`).MatchString(n):
		return 2
	case strings.HasPrefix(n, "~/.gemini/policies/"), home != "" && strings.HasPrefix(n, home+"/.gemini/policies/"):
		return 4
	case strings.HasPrefix(n, ".gemini/policies/"), strings.Contains(n, "/.gemini/policies/"):
		return 3
	}
	return 4
}

// geminiPlainTool is a tool name celguard's tool matcher reads literally.
var geminiPlainTool = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`) })

var geminiHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*\[\[[ \t]*rule[ \t]*\]\]`) })

func parseGemini(f File, mode string, tier int) ([]geminiRule, policy.Diagnostics) {
	var ds policy.Diagnostics
	at := func(line int) policy.Pos { return policy.Pos{File: f.Name, Line: line, Col: 1} }
	var doc map[string]any
	if _, err := toml.Decode(string(f.Data), &doc); err != nil {
		pos := at(1)
		if pe, ok := err.(toml.ParseError); ok {
			pos = policy.Pos{File: f.Name, Line: max(pe.Position.Line, 1), Col: max(pe.Position.Col, 1)}
		}
		return nil, policy.Diagnostics{diag(CodeSyntax, policy.SeverityError, pos, "%s", firstLine(err.Error()))}
	}
	headers := geminiHeader().FindAllIndex(f.Data, -1)
	lines := lineStarts(f.Data)
	rulePos := func(i int) policy.Pos {
		if i < len(headers) {
			return offsetPos(f.Name, lines, f.Data, int64(headers[i][0]))
		}
		return at(1)
	}
	for k := range doc {
		switch k {
		case "rule":
		case "safety_checker":
			ds = append(ds, diag(CodeUnsupported, policy.SeverityError, at(1),
				"safety_checker runs a checker that can deny what the rules allow; celguard cannot run Gemini CLI's checkers (write the check as a rule)"))
		default:
			ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, at(1), "Gemini CLI ignores the top-level key %q", k))
		}
	}
	raw, _ := doc["rule"].([]map[string]any)
	if doc["rule"] != nil && raw == nil {
		return nil, append(ds, diag(CodeInvalid, policy.SeverityError, at(1), "rule must be an array of tables ([[rule]])"))
	}
	var out []geminiRule
	for i, m := range raw {
		pos := rulePos(i)
		bad := func(format string, args ...any) {
			ds = append(ds, diag(CodeInvalid, policy.SeverityError, pos, "rule #%d: "+format, append([]any{i + 1}, args...)...))
		}
		r := geminiRule{pos: pos, index: i, tier: tier}
		var toolNames []string
		skipMode, yolo := false, false
		for _, k := range sortedKeys(m) {
			v := m[k]
			switch k {
			case "toolName":
				switch t := v.(type) {
				case string:
					toolNames = []string{t}
				case []any:
					for _, x := range t {
						s, ok := x.(string)
						if !ok {
							bad("toolName must be a string or a list of strings")
						}
						toolNames = append(toolNames, s)
					}
				default:
					bad("toolName must be a string or a list of strings")
				}
			case "commandPrefix":
				switch t := v.(type) {
				case string:
					r.prefixes = []string{t}
				case []any:
					for _, x := range t {
						s, ok := x.(string)
						if !ok {
							bad("commandPrefix must be a string or a list of strings")
						}
						r.prefixes = append(r.prefixes, s)
					}
				default:
					bad("commandPrefix must be a string or a list of strings")
				}
			case "decision", "mcpName", "commandRegex", "argsPattern", "deny_message", "denyMessage", "subagent":
				s, ok := v.(string)
				if !ok {
					bad("%s must be a string", k)
					continue
				}
				switch k {
				case "decision":
					r.decision = s
				case "mcpName":
					r.exactTool = s // resolved below
				case "commandRegex":
					r.cmdRegex = s
				case "argsPattern":
					r.args, r.argsWhat = true, "argsPattern"
				case "deny_message", "denyMessage":
					if r.denyMessage == "" || k == "denyMessage" {
						r.denyMessage = s
					}
				case "subagent":
					r.args, r.argsWhat = true, "subagent"
				}
			case "priority":
				n, ok := v.(int64)
				if !ok || n < 0 || n > 999 {
					bad("priority must be an integer from 0 to 999")
				}
				r.priority = int(n)
			case "modes":
				l, ok := v.([]any)
				if !ok {
					bad("modes must be a list")
					continue
				}
				holds := len(l) == 0
				for _, x := range l {
					s, _ := x.(string)
					if !slices.Contains(geminiModes, s) {
						bad("unknown approval mode %v (Gemini CLI's are %s)", x, strings.Join(geminiModes, ", "))
					}
					holds = holds || s == mode
					yolo = yolo || s == "yolo"
				}
				skipMode = !holds
			case "toolAnnotations":
				r.args, r.argsWhat = true, "toolAnnotations"
			case "allow_redirection", "allowRedirection":
				if _, ok := v.(bool); !ok {
					bad("%s must be a boolean", k)
				}
			case "interactive":
				if _, ok := v.(bool); !ok {
					bad("interactive must be a boolean")
					continue
				}
				r.args, r.argsWhat = true, "interactive"
			default:
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, pos, "rule #%d: Gemini CLI ignores the key %q", i+1, k))
			}
		}
		if _, ok := m["priority"]; !ok {
			bad("priority is required")
		}
		if _, ok := m["toolName"]; !ok {
			bad("toolName is required (\"*\" for every tool; with mcpName, every tool of the server)")
		}
		if skipMode {
			ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, pos, "rule #%d does not hold in the %s approval mode: the import decides as that mode does", i+1, mode))
			continue
		}
		if tier == geminiTiers["extension"] && (r.decision == "allow" || yolo) {
			ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, pos, "rule #%d: Gemini CLI ignores an extension's allow rules and its rules for the yolo mode", i+1))
			continue
		}
		switch r.decision {
		case "allow", "deny", "ask_user":
		default:
			bad("decision must be allow, deny or ask_user")
			continue
		}
		if (len(r.prefixes) > 0 || r.cmdRegex != "") && (len(toolNames) != 1 || toolNames[0] != "run_shell_command") {
			bad("commandPrefix and commandRegex need toolName = \"run_shell_command\"")
			continue
		}
		if len(r.prefixes) > 0 && r.cmdRegex != "" {
			bad("commandPrefix and commandRegex cannot be used together")
			continue
		}
		if r.cmdRegex != "" {
			if _, err := geminiRE2(r.cmdRegex); err != nil {
				ds = append(ds, diag(CodeUnsupported, policy.SeverityError, pos, "rule #%d: commandRegex %q is not an RE2 regular expression (lookarounds and backreferences have no celguard form): %v", i+1, r.cmdRegex, err))
				continue
			}
		}
		mcp := r.exactTool
		r.exactTool = ""
		if _, ok := m["mcpName"]; ok && mcp == "" {
			bad("mcpName cannot be empty (Gemini CLI refuses the rule)")
			continue
		}
		if strings.ContainsAny(mcp, "?[]{}\\") || (strings.Contains(mcp, "*") && mcp != "*") {
			ds = append(ds, diag(CodeUnsupported, policy.SeverityError, pos, "rule #%d: mcpName %q holds glob characters celguard would not compare literally", i+1, mcp))
			continue
		}
		switch {
		case mcp != "" && len(toolNames) == 0:
			r.tools = []string{"mcp_" + mcp + "_*"}
			if mcp == "*" {
				r.tools = []string{"mcp_*"}
			}
		case mcp != "":
			for _, t := range toolNames {
				if t == "*" {
					r.tools = append(r.tools, "mcp_"+mcp+"_*")
				} else {
					r.tools = append(r.tools, "mcp_"+mcp+"_"+t)
				}
			}
		default:
			for _, t := range toolNames {
				switch {
				case t == "*":
					r.tools = nil
					toolNames = nil
				case t == "mcp_*" || (strings.HasPrefix(t, "mcp_") && strings.HasSuffix(t, "_*")):
					r.tools = append(r.tools, t)
				case t == "":
					bad("toolName cannot be empty (Gemini CLI refuses the rule)")
				case !geminiPlainTool().MatchString(t):
					r.exactTools = append(r.exactTools, t) // compared as a string, never as a glob
				default:
					r.tools = append(r.tools, t)
					r.tools = append(r.tools, geminiAliases[t]...)
				}
				if toolNames == nil {
					break
				}
			}
		}
		r.shell = len(r.tools) > 0
		for _, t := range r.tools {
			if t != "run_shell_command" && t != "ShellTool" {
				r.shell = false
			}
		}
		if r.shell && len(r.prefixes)+len(r.cmdRegex) > 0 {
			r.tools = geminiShellTools
		}
		out = append(out, r)
	}
	return out, ds
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// geminiPrefixRegexp is the RE2, over a command's raw text, of Gemini CLI's
// commandPrefix pattern (a regex over the JSON of the arguments: the
// prefix, then whitespace that JSON does not escape, a quote, or the end).
func geminiPrefixRegexp(prefixes []string) string {
	var alts []string
	for _, p := range prefixes {
		alts = append(alts, regexp.QuoteMeta(p))
	}
	return `^(?:` + strings.Join(alts, "|") + `)(?:$|[ "\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}])`
}

// geminiJSON is the CEL expression of Gemini CLI's stableStringify of a
// shell (sub)command's arguments, {command, dir_path}: each top-level pair
// between NUL characters, keys sorted; canonical() escapes strings as
// JSON.stringify does.
func geminiJSON(unit string) string {
	return `"{\x00\"command\":" + canonical(` + unit + `) + "\x00" + (has(args.dir_path) ? ",\x00\"dir_path\":" + canonical(args.dir_path) + "\x00" : "") + "}"`
}

// jsSpace is JavaScript's \s, which RE2's (ASCII) is not.
const jsSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// geminiRE2 translates a JavaScript regular expression as Gemini CLI
// compiles it (no flags) into RE2: \s and \S as JavaScript has them, and
// . not matching line terminators; an error for what RE2 lacks.
func geminiRE2(js string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(js); i++ {
		c := js[i]
		switch {
		case c == '\\' && i+1 < len(js):
			n := js[i+1]
			i++
			switch {
			case n == 's' && inClass:
				b.WriteString(jsSpace)
			case n == 's':
				b.WriteString("[" + jsSpace + "]")
			case n == 'S' && !inClass:
				b.WriteString("[^" + jsSpace + "]")
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		default:
			b.WriteByte(c)
		}
	}
	if _, err := regexp.Compile(b.String()); err != nil {
		return "", err
	}
	return b.String(), nil
}

func importGemini(files []File, o Options) (*doc, policy.Diagnostics) {
	var ds policy.Diagnostics
	mode := o.GeminiMode
	if mode == "" {
		mode = "default"
	}
	if !slices.Contains(geminiModes, mode) {
		return nil, policy.Diagnostics{diag(CodeInvalid, policy.SeverityError, policy.Pos{File: files[0].Name, Line: 1, Col: 1},
			"approval mode %q: Gemini CLI's are %s", mode, strings.Join(geminiModes, ", "))}
	}
	forced := 0
	if o.GeminiTier != "" {
		if forced = geminiTiers[o.GeminiTier]; forced == 0 {
			return nil, policy.Diagnostics{diag(CodeInvalid, policy.SeverityError, policy.Pos{File: files[0].Name, Line: 1, Col: 1},
				"tier %q: Gemini CLI's are default, extension, workspace, user and admin", o.GeminiTier)}
		}
	}
	var rules []geminiRule
	var tiers []string
	for _, f := range files {
		tier := forced
		if tier == 0 {
			tier = geminiFileTier(f.Name, o.HomeDir)
		}
		tiers = append(tiers, f.Name+": "+geminiTierNames[tier])
		rs, fds := parseGemini(f, mode, tier)
		ds = append(ds, fds...)
		for i := range rs {
			rs[i].order = len(rules) + i
		}
		rules = append(rules, rs...)
	}
	if ds.HasErrors() {
		return nil, ds
	}
	// Gemini CLI's order: tier + priority/1000, highest first (a stable
	// sort keeps the files' order among equals).
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].final() > rules[j].final() })
	note := fmt.Sprintf("approval mode %s; tiers: %s", mode, strings.Join(tiers, ", "))
	d := &doc{name: "gemini-cli-policy", note: note,
		description: "Gemini CLI policy rules, imported for the " + mode + " approval mode: for a shell command every deny, then every ask, then every allow; for another tool Gemini CLI's order."}
	var allowREs []string
	for _, r := range rules {
		if r.decision == "allow" && r.shell && !r.args {
			switch {
			case len(r.prefixes) > 0:
				allowREs = append(allowREs, fmt.Sprintf("c.text.matches(%q)", geminiPrefixRegexp(r.prefixes)))
			case r.cmdRegex != "":
				re, _ := geminiRE2(r.cmdRegex)
				allowREs = append(allowREs, fmt.Sprintf("(%s).matches(%q)", geminiJSON("c.text"), `"command":"`+re))
			}
		}
	}
	if len(allowREs) > 0 {
		safe := "c.depth == 0 && c.wrappers.size() == 0 && c.env.size() == 0 && c.redirects.size() == 0 && !c.background && !c.dynamic && c.via == \"\""
		d.variables = append(d.variables, variable{"gemini_all_allowed",
			fmt.Sprintf("command.matches(%q) && shell.parse(command).ok && !shell.parse(command).opaque && shell.commands(command).size() > 0 && shell.commands(command).all(c, %s && (%s))",
				codexPlain, safe, strings.Join(allowREs, " || "))})
	}
	for n, r := range rules {
		verdict := map[string]string{"deny": "block", "ask_user": "ask", "allow": "allow"}[r.decision]
		strict := verdict != "allow"
		cr := rule{
			id:       sanitizeID(fmt.Sprintf("gemini-%s-%d", r.decision, n+1)),
			priority: severity(verdict)*10000 + r.final(),
			tools:    r.tools,
			verdict:  verdict,
			reason:   r.denyMessage,
			code:     "gemini_policy",
			src:      r.pos,
			comment:  fmt.Sprintf("rule #%d: decision %s, priority %d, tier %s", r.index+1, r.decision, r.priority, geminiTierNames[r.tier]),
		}
		if cr.reason == "" {
			cr.reason = fmt.Sprintf("Gemini CLI policy rule #%d of %s (%s)", r.index+1, r.pos.File, r.decision)
		}
		if r.exactTool != "" {
			cr.condition = fmt.Sprintf("tool == %q", r.exactTool)
		}
		if len(r.exactTools) > 0 {
			if len(cr.tools) > 0 {
				cr.condition = fmt.Sprintf("tool in %s || tool in %s", celList(cr.tools), celList(r.exactTools))
				cr.tools = nil
			} else {
				cr.condition = fmt.Sprintf("tool in %s", celList(r.exactTools))
			}
		}
		and := func(c string) {
			if cr.condition == "" {
				cr.condition = c
			} else {
				cr.condition = "(" + cr.condition + ") && (" + c + ")"
			}
		}
		switch {
		case r.args && strict:
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "rule #%d: %s has no celguard form: the %s applies to every call of its tools (stricter)", r.index+1, r.argsWhat, r.decision))
		case r.args:
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos, "rule #%d: %s has no celguard form: the allow is left out (stricter)", r.index+1, r.argsWhat))
			continue
		case len(r.prefixes) > 0:
			re := geminiPrefixRegexp(r.prefixes)
			if strict {
				and(fmt.Sprintf("command.matches(%q) || shell.commands(command).exists(c, c.text.matches(%q) || c.argv.join(\" \").matches(%q))", re, re, re))
			} else {
				and(fmt.Sprintf("gemini_all_allowed && shell.commands(command).exists(c, c.text.matches(%q))", re))
			}
		case r.cmdRegex != "":
			js, _ := geminiRE2(r.cmdRegex)
			re := `"command":"` + js
			if strict {
				and(fmt.Sprintf("(%s).matches(%q) || shell.commands(command).exists(c, (%s).matches(%q) || (%s).matches(%q))",
					geminiJSON("command"), re, geminiJSON("c.text"), re, geminiJSON(`c.argv.join(" ")`), re))
			} else {
				and(fmt.Sprintf("gemini_all_allowed && shell.commands(command).exists(c, (%s).matches(%q))", geminiJSON("c.text"), re))
			}
		case !strict && (r.tools == nil || r.shell || containsAny(r.tools, geminiShellTools)):
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos,
				"rule #%d allows shell commands without a command pattern; Gemini CLI still asks for those its heuristics find dangerous, which celguard cannot reproduce: left out (stricter)", r.index+1))
			continue
		}
		if strict && len(r.prefixes) == 0 && r.cmdRegex == "" {
			// For a call of another tool than the shell, Gemini CLI's
			// first matching rule decides: a rule of a milder decision
			// that comes first and matches by the tool's name alone
			// shadows this one.
			var by []string
			for _, h := range rules[:n] {
				if severity(map[string]string{"deny": "block", "ask_user": "ask", "allow": "allow"}[h.decision]) < severity(verdict) &&
					!h.args && len(h.prefixes) == 0 && h.cmdRegex == "" && geminiToolsOverlap(r, h) {
					by = append(by, geminiToolExpr(h))
				}
			}
			if len(by) > 0 {
				and(fmt.Sprintf("tool in %s || !(%s)", celList(geminiShellTools), strings.Join(by, " || ")))
			}
		}
		d.rules = append(d.rules, cr)
	}
	d.cases = geminiCases(rules, d.rules)
	return d, ds
}

// final is the rule's place in Gemini CLI's order as an integer: tier ×
// 1000 + priority (Gemini CLI's tier + priority/1000).
func (r geminiRule) final() int { return r.tier*1000 + r.priority }

// geminiToolExpr is a CEL expression true when a call's tool is one the
// rule names (by its name alone).
func geminiToolExpr(r geminiRule) string {
	var alts []string
	if r.tools == nil && r.exactTool == "" && len(r.exactTools) == 0 {
		return "true"
	}
	for _, t := range r.tools {
		if strings.Contains(t, "*") {
			alts = append(alts, fmt.Sprintf("glob.match(tool, %q)", t))
		} else {
			alts = append(alts, fmt.Sprintf("tool == %q", t))
		}
	}
	if r.exactTool != "" {
		alts = append(alts, fmt.Sprintf("tool == %q", r.exactTool))
	}
	if len(r.exactTools) > 0 {
		alts = append(alts, fmt.Sprintf("tool in %s", celList(r.exactTools)))
	}
	return "(" + strings.Join(alts, " || ") + ")"
}

// geminiToolsOverlap says whether two rules may name a tool in common
// (true when unsure: a shadowing test too many is only longer).
func geminiToolsOverlap(a, b geminiRule) bool {
	names := func(r geminiRule) []string {
		l := append(append([]string{}, r.tools...), r.exactTools...)
		if r.exactTool != "" {
			l = append(l, r.exactTool)
		}
		return l
	}
	la, lb := names(a), names(b)
	if len(la) == 0 || len(lb) == 0 {
		return true
	}
	for _, x := range la {
		for _, y := range lb {
			switch {
			case x == y:
				return true
			case strings.Contains(x, "*") && strings.Contains(y, "*"):
				return true
			case strings.Contains(x, "*"):
				if m, _ := path.Match(x, y); m {
					return true
				}
			case strings.Contains(y, "*"):
				if m, _ := path.Match(y, x); m {
					return true
				}
			}
		}
	}
	return false
}

func containsAny(l, of []string) bool {
	for _, x := range of {
		for _, y := range l {
			if x == y {
				return true
			}
		}
	}
	return false
}

// geminiCases makes a call per imported rule with a plain tool name or a
// command prefix, expected to get the import's decision: the strictest
// decision among the rules that match it (Gemini CLI's where no rule of
// another decision and higher priority also matches).
func geminiCases(rules []geminiRule, imported []rule) []testCase {
	var out []testCase
	seen := map[string]bool{}
	byPos := map[policy.Pos][]rule{}
	for _, r := range imported {
		byPos[r.src] = append(byPos[r.src], r)
	}
	for _, r := range rules {
		if len(byPos[r.pos]) == 0 || r.args || r.exactTool != "" || len(r.tools) == 0 || strings.Contains(r.tools[0], "*") {
			continue
		}
		tool := r.tools[0]
		args := map[string]any{}
		if len(r.prefixes) > 0 {
			if !regexp.MustCompile(codexPlain).MatchString(r.prefixes[0]) {
				continue
			}
			args["command"] = r.prefixes[0] + " x"
		} else if r.cmdRegex != "" {
			js, err := geminiRE2(r.cmdRegex)
			if err != nil {
				continue
			}
			sample, ok := regexExample(regexp.MustCompile("^(?:" + js + ")"))
			if !ok || !regexp.MustCompile(codexPlain).MatchString(sample) {
				continue
			}
			args["command"] = sample
		}
		key := tool + fmt.Sprint(args)
		if seen[key] {
			continue
		}
		seen[key] = true
		verdict, id, best := "allow", "none", -1
		for _, ir := range imported {
			if geminiCaseMatches(ir, rules, tool, args) && ir.priority > best {
				best, verdict, id = ir.priority, ir.verdict, ir.id
			}
		}
		out = append(out, testCase{name: strings.TrimSpace(fmt.Sprintf("rule #%d of %s: %s %s", r.index+1, r.pos.File, tool, str0(args["command"]))), tool: tool, args: args, verdict: verdict, rule: id, src: r.pos})
	}
	return out
}

// geminiCaseMatches says whether an imported rule matches a sample call (a
// tool by name, or a plain command).
func geminiCaseMatches(ir rule, rules []geminiRule, tool string, args map[string]any) bool {
	var src *geminiRule
	for i := range rules {
		if rules[i].pos == ir.src {
			src = &rules[i]
		}
	}
	if src == nil {
		return false
	}
	if len(ir.tools) > 0 && !containsAny(ir.tools, []string{tool}) {
		return false
	}
	cmd, _ := args["command"].(string)
	if len(src.prefixes) > 0 {
		return regexp.MustCompile(geminiPrefixRegexp(src.prefixes)).MatchString(cmd)
	}
	if src.cmdRegex != "" {
		js, err := geminiRE2(src.cmdRegex)
		if err != nil {
			return false
		}
		var buf strings.Builder
		e := json.NewEncoder(&buf)
		e.SetEscapeHTML(false)
		_ = e.Encode(cmd)
		enc := strings.TrimSuffix(buf.String(), "\n")
		return regexp.MustCompile(`"command":"` + js).MatchString("{\x00\"command\":" + string(enc) + "\x00}")
	}
	return true
}

func str0(v any) string { s, _ := v.(string); return s }

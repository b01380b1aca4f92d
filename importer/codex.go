package importer

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/celguard/celguard/policy"
)

// Codex execpolicy `.rules` files (openai/codex, codex-rs/execpolicy):
// Starlark, run by go.starlark.net here as by the starlark crate there,
// with three built-ins:
//
//	prefix_rule(pattern, decision = "allow", match = [], not_match = [], justification = None)
//	network_rule(host, protocol, decision, justification = None)
//	host_executable(name, paths)
//
// A prefix rule matches an argv whose first words are the pattern's (a list
// element is a set of alternatives); of every rule that matches, the
// strictest decision stands (forbidden > prompt > allow). match and
// not_match are examples Codex checks when it loads the file.
//
// celguard decides the shell tools' command (a string, or an argv joined
// with shell quoting) by its simple commands:
//   - forbidden and prompt rules block and ask when ANY command matches,
//     compared by program name (so `sudo /usr/bin/git push` matches
//     ["git", "push"], and a word that is not a literal matches any
//     token): never looser than Codex, which compares argv[0] exactly;
//   - allow rules allow only when EVERY command matches some rule exactly
//     (argv[0] as written), at top level, without wrappers, assignments,
//     redirections, backgrounding or non-literal words, in a command line
//     made only of plain or quoted words and the operators && || ; |. A
//     command line outside that subset is left to the other rules: where
//     Codex would parse it and allow, celguard is stricter.
//
// A command no rule matches gets no decision from the import (Codex then
// applies its own approval policy; celguard the rest of the policy set).

// codexRule is one prefix_rule call.
type codexRule struct {
	tokens        [][]string // each position's alternatives
	decision      string     // allow, prompt, forbidden
	justification string
	match         [][]string
	notMatch      [][]string
	pos           policy.Pos
	index         int
}

// verdict is the celguard verdict of a Codex decision.
func (r *codexRule) verdict() string {
	switch r.decision {
	case "forbidden":
		return "block"
	case "prompt":
		return "ask"
	}
	return "allow"
}

func (r *codexRule) id() string {
	return sanitizeID("codex-" + strings.Join(r.tokens[0], "-") + fmt.Sprintf("-%d", r.index+1))
}

// matchesExact is Codex's PrefixPattern.matches_prefix.
func (r *codexRule) matchesExact(argv []string) bool {
	if len(argv) < len(r.tokens) {
		return false
	}
	for i, alts := range r.tokens {
		if !slices.Contains(alts, argv[i]) {
			return false
		}
	}
	return true
}

// codexPolicy is every rule of the files, with the hosts' executables.
type codexPolicy struct {
	rules []*codexRule
	hosts map[string][]string // host_executable name -> absolute paths
}

// check is Codex's decision for an argv: the strictest of the matching
// rules' decisions, "" when none matches (execpolicy check without
// --resolve-host-executables).
func (p *codexPolicy) check(argv []string) string {
	best := ""
	for _, r := range p.rules {
		if r.matchesExact(argv) && codexRank(r.decision) > codexRank(best) {
			best = r.decision
		}
	}
	return best
}

func codexRank(d string) int {
	switch d {
	case "allow":
		return 1
	case "prompt":
		return 2
	case "forbidden":
		return 3
	}
	return 0
}

// parseCodex runs the .rules files.
func parseCodex(files []File) (*codexPolicy, policy.Diagnostics) {
	p := &codexPolicy{hosts: map[string][]string{}}
	var ds policy.Diagnostics
	for _, f := range files {
		ds = append(ds, p.run(f)...)
	}
	return p, ds
}

// codexFileOptions are the dialect Codex parses: Starlark's, with nested
// functions, lambdas and top-level control flow allowed. Codex's f-strings
// are not Starlark's (go.starlark.net has none): a file using one does not
// parse here, with its position.
var codexFileOptions = &syntax.FileOptions{Set: true, While: false, TopLevelControl: true, GlobalReassign: true, Recursion: false}

// maxCodexSteps bounds a .rules file's computation (a loop that never ends
// is an error at its position, not a hang).
const maxCodexSteps = 1 << 20

func (p *codexPolicy) run(f File) policy.Diagnostics {
	var ds policy.Diagnostics
	thread := &starlark.Thread{Name: f.Name, Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
		return nil, errors.New("load() is not supported in an execpolicy file")
	}}
	thread.SetMaxExecutionSteps(maxCodexSteps)
	callerPos := func() policy.Pos {
		fr := thread.CallFrame(1)
		return policy.Pos{File: f.Name, Line: int(fr.Pos.Line), Col: int(fr.Pos.Col)}
	}
	failAt := func(code policy.Code, format string, args ...any) error {
		ds = append(ds, diag(code, policy.SeverityError, callerPos(), format, args...))
		return errReported
	}
	predeclared := starlark.StringDict{
		"prefix_rule": starlark.NewBuiltin("prefix_rule", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var pattern *starlark.List
			var decision, justification starlark.Value = starlark.None, starlark.None
			var match, notMatch, reviewer, canonical starlark.Value = starlark.None, starlark.None, starlark.None, starlark.None
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "decision?", &decision,
				"match?", &match, "not_match?", &notMatch, "justification?", &justification,
				"reviewer?", &reviewer, "canonical_matching?", &canonical); err != nil {
				return nil, failAt(CodeSyntax, "%v", err)
			}
			r := &codexRule{pos: callerPos(), index: len(p.rules), decision: "allow"}
			if decision != starlark.None {
				s, ok := starlark.AsString(decision)
				if !ok || codexRank(s) == 0 {
					return nil, failAt(CodeInvalid, "invalid decision: %s (allow, prompt or forbidden)", decision)
				}
				r.decision = s
			}
			if justification != starlark.None {
				s, ok := starlark.AsString(justification)
				if !ok || strings.TrimSpace(s) == "" {
					return nil, failAt(CodeInvalid, "justification must be a non-empty string")
				}
				r.justification = s
			}
			if canonical != starlark.None && canonical != starlark.False {
				return nil, failAt(CodeUnsupported, "canonical_matching = %s: its matching is not documented; celguard imports only exact prefix matching", canonical)
			}
			if reviewer != starlark.None {
				ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, r.pos,
					"reviewer %s names who settles a prompt in Codex; celguard asks the person it asks for every ask rule, never less", reviewer))
			}
			for i := 0; i < pattern.Len(); i++ {
				switch v := pattern.Index(i).(type) {
				case starlark.String:
					r.tokens = append(r.tokens, []string{string(v)})
				case *starlark.List:
					if v.Len() == 0 {
						return nil, failAt(CodeInvalid, "pattern alternatives cannot be empty")
					}
					var alts []string
					for j := 0; j < v.Len(); j++ {
						s, ok := v.Index(j).(starlark.String)
						if !ok {
							return nil, failAt(CodeInvalid, "pattern alternative must be a string (got %s)", v.Index(j).Type())
						}
						alts = append(alts, string(s))
					}
					r.tokens = append(r.tokens, alts)
				default:
					return nil, failAt(CodeInvalid, "pattern element must be a string or list of strings (got %s)", v.Type())
				}
			}
			if len(r.tokens) == 0 {
				return nil, failAt(CodeInvalid, "pattern cannot be empty")
			}
			var err error
			if r.match, err = codexExamples(match); err != nil {
				return nil, failAt(CodeInvalid, "match: %v", err)
			}
			if r.notMatch, err = codexExamples(notMatch); err != nil {
				return nil, failAt(CodeInvalid, "not_match: %v", err)
			}
			// Codex checks the examples against this call's rules alone.
			for _, ex := range r.notMatch {
				if r.matchesExact(ex) || p.matchesViaHost(r, ex) {
					return nil, failAt(CodeInvalid, "not_match example %q matches the rule (Codex refuses to load this file)", strings.Join(ex, " "))
				}
			}
			for _, ex := range r.match {
				if !r.matchesExact(ex) && !p.matchesViaHost(r, ex) {
					return nil, failAt(CodeInvalid, "match example %q does not match the rule (Codex refuses to load this file)", strings.Join(ex, " "))
				}
			}
			p.rules = append(p.rules, r)
			return starlark.None, nil
		}),
		"network_rule": starlark.NewBuiltin("network_rule", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var host, protocol, decision string
			var justification starlark.Value = starlark.None
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "host", &host, "protocol", &protocol, "decision", &decision, "justification?", &justification); err != nil {
				return nil, failAt(CodeSyntax, "%v", err)
			}
			if decision == "allow" {
				// Leaving out an allow is never looser.
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, callerPos(),
					"network_rule allows %s connections to %s from Codex's sandbox; celguard decides tool calls, not connections, so the allow is left out (never looser)", protocol, host))
				return starlark.None, nil
			}
			return nil, failAt(CodeUnsupported, "network_rule %s of %s: Codex enforces it on the sandbox's network connections, which celguard does not see; a tool-call rule would not be stricter everywhere (write a url.hostMatches rule for the web tools and the shell commands you know)", decision, host)
		}),
		"host_executable": starlark.NewBuiltin("host_executable", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var name string
			var paths *starlark.List
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name, "paths", &paths); err != nil {
				return nil, failAt(CodeSyntax, "%v", err)
			}
			if name == "" || strings.Contains(name, "/") {
				return nil, failAt(CodeInvalid, "host_executable name must be a bare executable name (got %q)", name)
			}
			for i := 0; i < paths.Len(); i++ {
				s, ok := paths.Index(i).(starlark.String)
				if !ok || !strings.HasPrefix(string(s), "/") || path.Base(string(s)) != name {
					return nil, failAt(CodeInvalid, "host_executable path %s must be absolute with base name %q", paths.Index(i), name)
				}
				if !slices.Contains(p.hosts[name], string(s)) {
					p.hosts[name] = append(p.hosts[name], string(s))
				}
			}
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, callerPos(),
				"host_executable %s: Codex may match its rules on these absolute paths; celguard blocks and asks on any path of that name and allows only the bare name, never looser", name))
			return starlark.None, nil
		}),
	}
	_, err := starlark.ExecFileOptions(codexFileOptions, thread, f.Name, f.Data, predeclared)
	if err != nil && !errors.Is(err, errReported) {
		var ee *starlark.EvalError
		var se syntax.Error
		switch {
		case errors.As(err, &se):
			ds = append(ds, diag(CodeSyntax, policy.SeverityError, policy.Pos{File: f.Name, Line: int(se.Pos.Line), Col: int(se.Pos.Col)}, "%s", se.Msg))
		case errors.As(err, &ee):
			pos := policy.Pos{File: f.Name, Line: 1, Col: 1}
			if st := ee.CallStack; len(st) > 0 {
				top := st[len(st)-1]
				pos = policy.Pos{File: f.Name, Line: int(top.Pos.Line), Col: int(top.Pos.Col)}
			}
			if !ds.HasErrors() {
				ds = append(ds, diag(CodeSyntax, policy.SeverityError, pos, "%s", ee.Msg))
			}
		default:
			if !ds.HasErrors() {
				ds = append(ds, diag(CodeSyntax, policy.SeverityError, policy.Pos{File: f.Name, Line: 1, Col: 1}, "%v", err))
			}
		}
	}
	return ds
}

// errReported stops the Starlark run after a diagnostic was recorded.
var errReported = errors.New("reported")

// matchesViaHost is Codex's example check with host executables resolved:
// an absolute argv[0] listed for a rule's program matches it.
func (p *codexPolicy) matchesViaHost(r *codexRule, argv []string) bool {
	if len(argv) == 0 || !strings.HasPrefix(argv[0], "/") {
		return false
	}
	for _, head := range r.tokens[0] {
		if slices.Contains(p.hosts[head], argv[0]) {
			rest := append([]string{head}, argv[1:]...)
			if r.matchesExact(rest) {
				return true
			}
		}
	}
	return false
}

// codexExamples reads match or not_match: strings split as shlex does, or
// lists of strings.
func codexExamples(v starlark.Value) ([][]string, error) {
	if v == starlark.None {
		return nil, nil
	}
	l, ok := v.(*starlark.List)
	if !ok {
		return nil, fmt.Errorf("must be a list (got %s)", v.Type())
	}
	var out [][]string
	for i := 0; i < l.Len(); i++ {
		switch e := l.Index(i).(type) {
		case starlark.String:
			words, err := shlexSplit(string(e))
			if err != nil {
				return nil, fmt.Errorf("example %q: %v", string(e), err)
			}
			if len(words) == 0 {
				return nil, fmt.Errorf("example cannot be an empty string")
			}
			out = append(out, words)
		case *starlark.List:
			var words []string
			for j := 0; j < e.Len(); j++ {
				s, ok := e.Index(j).(starlark.String)
				if !ok {
					return nil, fmt.Errorf("example tokens must be strings (got %s)", e.Index(j).Type())
				}
				words = append(words, string(s))
			}
			if len(words) == 0 {
				return nil, fmt.Errorf("example cannot be an empty list")
			}
			out = append(out, words)
		default:
			return nil, fmt.Errorf("example must be a string or list of strings (got %s)", e.Type())
		}
	}
	return out, nil
}

// shlexSplit splits as Python's shlex.split in POSIX mode (the shlex crate
// Codex uses): whitespace separates words; single quotes keep everything;
// double quotes keep everything but a backslash before $ ` " \ or a newline;
// outside quotes a backslash escapes the next character; # starts a
// comment at the start of a word.
func shlexSplit(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case c == '\\':
			i++
			if i >= len(rs) {
				return nil, errors.New("invalid shell syntax: a trailing backslash")
			}
			if rs[i] != '\n' {
				cur.WriteRune(rs[i])
			}
			inWord = true
		case c == '\'':
			inWord = true
			i++
			for i < len(rs) && rs[i] != '\'' {
				cur.WriteRune(rs[i])
				i++
			}
			if i >= len(rs) {
				return nil, errors.New("invalid shell syntax: an unterminated single quote")
			}
		case c == '"':
			inWord = true
			i++
			for i < len(rs) && rs[i] != '"' {
				if rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[i+1]) {
					i++
					if rs[i] != '\n' {
						cur.WriteRune(rs[i])
					}
				} else {
					cur.WriteRune(rs[i])
				}
				i++
			}
			if i >= len(rs) {
				return nil, errors.New("invalid shell syntax: an unterminated double quote")
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// codexPlain is the command lines whose allow celguard trusts: plain or
// quoted words (as celguard quotes an argv) and && || ; | between them.
const codexPlain = `^\s*(?:(?:[A-Za-z0-9_./,:=+@%^-]|'[^']*'|"[^"$` + "`" + `\\]*"|\\')+\s*(?:&&|\|\||;|\|)?\s*)+$`

// codexExact is the CEL test that command c's argv starts with the rule's
// words exactly.
func (r *codexRule) codexExact(c string) string {
	parts := []string{fmt.Sprintf("%s.argv.size() >= %d", c, len(r.tokens))}
	for i, alts := range r.tokens {
		parts = append(parts, fmt.Sprintf("%s.argv[%d] in %s", c, i, celList(alts)))
	}
	return strings.Join(parts, " && ")
}

// codexBroad is the CEL test, never narrower than Codex's, that command c
// may run the rule's prefix: the program (after wrappers, by base name) or
// argv[0] is the first word, and each later word equals the rule's or is
// not a literal.
func (r *codexRule) codexBroad(c string) string {
	var bases []string
	for _, a := range r.tokens[0] {
		if b := path.Base(a); !slices.Contains(bases, b) {
			bases = append(bases, b)
		}
	}
	parts := []string{fmt.Sprintf("(%s.program in %s || %s.argv[0] in %s)", c, celList(bases), c, celList(r.tokens[0])),
		fmt.Sprintf("%s.argv.size() >= %d", c, len(r.tokens))}
	for i := 1; i < len(r.tokens); i++ {
		parts = append(parts, fmt.Sprintf("(%s.argv_dynamic[%d] || %s.argv[%d] in %s)", c, i, c, i, celList(r.tokens[i])))
	}
	return strings.Join(parts, " && ")
}

func importCodex(files []File) (*doc, policy.Diagnostics) {
	p, ds := parseCodex(files)
	if ds.HasErrors() {
		return nil, ds
	}
	d := &doc{name: "codex-execpolicy", description: "Codex execpolicy prefix rules, imported: the strictest matching rule decides; allow only when every command is known."}
	var known []string
	for _, r := range p.rules {
		known = append(known, "("+r.codexExact("c")+")")
	}
	if len(known) > 0 {
		safe := "c.depth == 0 && c.wrappers.size() == 0 && c.env.size() == 0 && c.redirects.size() == 0 && !c.background && !c.dynamic && c.via == \"\""
		d.variables = append(d.variables, variable{"codex_all_known",
			fmt.Sprintf("command.matches(%q) && shell.parse(command).ok && !shell.parse(command).opaque && shell.commands(command).size() > 0 && shell.commands(command).all(c, %s && (%s))",
				codexPlain, safe, strings.Join(known, " || "))})
	}
	for _, r := range p.rules {
		reason := r.justification
		if reason == "" {
			reason = fmt.Sprintf("Codex execpolicy: %s matches prefix rule %s (%s)", strings.Join(r.tokens[0], "|"), r.id(), r.decision)
		}
		cr := rule{
			id:       r.id(),
			priority: priorityOf(r.verdict()),
			classes:  []string{"shell"},
			verdict:  r.verdict(),
			reason:   reason,
			code:     "codex_execpolicy",
			src:      r.pos,
			comment:  fmt.Sprintf("prefix_rule(pattern = %s, decision = %q)", codexPattern(r.tokens), r.decision),
		}
		if r.decision == "allow" {
			cr.condition = fmt.Sprintf("codex_all_known && shell.commands(command).exists(c, %s)", r.codexExact("c"))
		} else {
			cr.condition = fmt.Sprintf("shell.commands(command).exists(c, %s)", r.codexBroad("c"))
		}
		d.rules = append(d.rules, cr)
	}
	d.cases = codexCases(p)
	return d, ds
}

func codexPattern(tokens [][]string) string {
	var parts []string
	for _, alts := range tokens {
		if len(alts) == 1 {
			parts = append(parts, q(alts[0]))
		} else {
			parts = append(parts, qlist(alts))
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// codexWrappers are the words celguard strips or looks through before a
// command's program (shell.commands): an example starting with one is
// decided on the command it wraps, so the suite leaves it out.
var codexWrappers = []string{"sudo", "doas", "env", "timeout", "nice", "nohup", "time", "command", "builtin", "exec",
	"xargs", "stdbuf", "setsid", "ionice", "chroot", "busybox", "nocorrect", "noglob", "bash", "sh", "zsh", "dash", "ksh",
	"eval", "find", "fish", "csh", "tcsh"}

// celguardCodex is the imported policy's decision for one argv sent as a
// shell tool's argv (joined with celguard's quoting), for the argvs the
// suite uses (argv[0] no wrapper): verdict and deciding rule.
func (p *codexPolicy) celguardDecision(argv []string) (verdict, ruleID string) {
	best, bestRule := 0, "none"
	prog := path.Base(argv[0])
	for _, r := range p.rules {
		v := r.verdict()
		var hit bool
		if v == "allow" {
			hit = r.matchesExact(argv)
		} else {
			hit = (slices.Contains(r.tokens[0], argv[0]) || slices.ContainsFunc(r.tokens[0], func(t string) bool { return path.Base(t) == prog })) &&
				len(argv) >= len(r.tokens)
			for i := 1; hit && i < len(r.tokens); i++ {
				hit = slices.Contains(r.tokens[i], argv[i])
			}
		}
		if hit && severity(v) > best {
			best, bestRule = severity(v), r.id()
		}
	}
	if best == 0 {
		return "allow", "none"
	}
	if best == severity("allow") {
		// Allowed only when the whole argv is known, which one command is.
		return "allow", bestRule
	}
	return [...]string{"", "allow", "ask", "block"}[best], bestRule
}

// codexCases makes a case for every match and not_match example and for
// each rule's own prefix with an extra word; each expects celguard's
// decision, which is Codex's or stricter (the case name says which).
func codexCases(p *codexPolicy) []testCase {
	var out []testCase
	seen := map[string]bool{}
	add := func(kind string, r *codexRule, argv []string) {
		if len(argv) == 0 || slices.Contains(codexWrappers, path.Base(argv[0])) {
			return
		}
		key := strings.Join(argv, "\x00")
		if seen[key] {
			return
		}
		seen[key] = true
		v, id := p.celguardDecision(argv)
		name := fmt.Sprintf("%s of %s: %s", kind, r.id(), strings.Join(argv, " "))
		if want := codexVerdict(p.check(argv)); want != v {
			name += fmt.Sprintf(" (stricter than Codex's %s)", orNone(p.check(argv)))
		}
		args := make([]any, len(argv))
		for i, a := range argv {
			args[i] = a
		}
		out = append(out, testCase{name: name, tool: "shell", args: map[string]any{"command": args}, verdict: v, rule: id, src: r.pos})
	}
	for _, r := range p.rules {
		for _, ex := range r.match {
			add("match example", r, ex)
		}
		for _, ex := range r.notMatch {
			add("not_match example", r, ex)
		}
		var prefix []string
		for _, alts := range r.tokens {
			prefix = append(prefix, alts[len(alts)-1])
		}
		add("representative call", r, append(slices.Clone(prefix), "extra-arg"))
		if len(prefix) > 1 {
			add("shorter than the prefix", r, prefix[:len(prefix)-1])
		}
	}
	return out
}

func codexVerdict(d string) string {
	switch d {
	case "forbidden":
		return "block"
	case "prompt":
		return "ask"
	}
	return "allow"
}

func orNone(s string) string {
	if s == "" {
		return "no match"
	}
	return s
}

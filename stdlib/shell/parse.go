package shell

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits of the analysis. They bound the work one command string can cause,
// so a hostile command cannot make the analysis hang.
const (
	// MaxInput is the longest command string Parse parses (1 MiB).
	// A longer one yields OK == false and a fallback split.
	MaxInput = 1 << 20
	// MaxDepth bounds nesting of scripts inside scripts: $( ), ` `,
	// <( ), >( ), bash -c, eval, find -exec and here-documents fed to a shell.
	// Anything deeper is not parsed and makes the result Opaque.
	MaxDepth = 8
	// MaxCommands bounds the number of simple commands reported.
	MaxCommands = 10000
	// MaxNesting bounds how deeply brackets ( ) { } $( ) may nest in a
	// command string; deeper strings are not parsed (OK == false), which
	// keeps parsing time linear on adversarial input.
	MaxNesting = 500
	// MaxInheritedRedirects bounds the redirections of enclosing compound
	// commands copied into each command.
	MaxInheritedRedirects = 16
)

// Line is the parsed view of a shell command string (bash dialect).
type Line struct {
	// OK is false when the string does not parse as bash. Commands then holds
	// a best-effort split (Via "fallback") so deny rules still see the words;
	// rules that allow should require OK.
	OK bool
	// Error is the parse error ("" when OK).
	Error string
	// Opaque is true when some code would run that the parse cannot see: a
	// program name or a bash -c / eval script that is not a literal, nesting
	// beyond MaxDepth, more than MaxCommands commands, or expansions that
	// exceed the Bounds of the string (ReasonOverBounds).
	Opaque bool
	// OpaqueReasons says why Opaque is set, one entry per cause.
	OpaqueReasons []string
	// Commands is every simple command the string would run, in execution
	// order, reaching into every list, pipeline, compound command, function
	// body, substitution and shell -c script.
	Commands []*Command
}

// Command is one simple command: a program and its words. Its methods read
// only Program, Path, Argv and ArgvDynamic, so they also serve a Command
// built by hand from a word list.
type Command struct {
	// Program is the basename of Path: "git" for /usr/bin/git. It is "" for
	// a command that is only redirections ("> file"). When argv[0] is not a
	// literal, Program is its last path component only if that component
	// is literal text ("$X"/bin/rm is rm); otherwise it is Path itself
	// ($(echo rm), ${EDITOR}, /opt/$TOOL), which holds a $, a ` or a <( and
	// so never equals a real program name; the Line is Opaque either way.
	Program string
	// Path is argv[0] as written, quotes removed.
	Path string
	// Argv is the command's words after the wrappers, quotes removed. A word
	// that is not a literal (it contains $VAR, $( ), $(( )), <( )) is kept
	// with its expansions in source form, or with a variable's value when the
	// same string assigned it a literal earlier, and is marked in ArgvDynamic.
	Argv []string
	// ArgvDynamic is parallel to Argv: true for a word that is not a literal.
	ArgvDynamic []bool
	// argvResolved is parallel to Argv (or nil when no word is): true for a
	// dynamic word whose every expansion is a variable with a literal value
	// known from earlier in the same string, so HasFlag can read it.
	argvResolved []bool
	// argvPattern is parallel to Argv (or nil when no word needs it): the
	// word as a glob pattern when it differs from its text, else "" (see
	// patternOf).
	argvPattern []string
	// argvFind is parallel to Argv (or nil) in the command of a find
	// -exec: a word holding {} as the pattern of the paths find passes in
	// its place, else "".
	argvFind []string
	// linkOnly marks a symbolic ln that is the last command of its line
	// (see markLastLinks): it writes its link names, not its targets.
	linkOnly bool
	// Env holds the leading NAME=value assignments, including those given to
	// an env or sudo wrapper.
	Env map[string]string
	// Redirects are the command's redirections, then those of enclosing
	// compound commands ({ ...; } > f).
	Redirects []Redirect
	// Wrappers are the programs stripped to reach Program (sudo, env,
	// timeout, nice, nohup, time, command, xargs, exec, ...), outermost first,
	// followed for a nested command by the shell (bash -c) or find -exec
	// that runs it.
	Wrappers []Wrapper
	// Depth is 0 for a top-level command and one more for each enclosing
	// substitution or nested script.
	Depth int
	// Via says how the command is reached: "" at top level, "$()" (also for
	// backticks), "<()", ">()", "-c" (shell -c script), "eval",
	// "find -exec", "<<" (here-document or here-string fed to a shell), or
	// "fallback" when the string did not parse.
	Via string
	// Upstream lists the programs of the earlier stages of the pipeline the
	// command is in, so curl x | sh has Upstream ["curl"] for sh.
	Upstream []string
	// Background is true for a command run with &.
	Background bool
	// Text is the source text of the command, wrappers included.
	Text string
}

// Redirect is one redirection of a command.
type Redirect struct {
	// Op is the operator: > >> < <> <& >& >| << <<- <<< &> &>>.
	Op string
	// FD is the file descriptor written before the operator ("2" in 2>), or "".
	FD string
	// Target is the word after the operator, quotes removed (the delimiter
	// for a here-document).
	Target string
	// Dynamic is true when Target is not a literal, and for a
	// here-document or here-string whose Body holds an expansion the shell
	// does when it runs ($x, $(cmd), `cmd`: the delimiter was not quoted).
	Dynamic bool
	// Body is the text of a here-document or here-string, else "".
	Body string

	// bodySpans are the ranges of Body that hold an expansion done by the
	// shell that reads the redirection (not by a shell fed the body).
	bodySpans []shellSpan
	// pattern is Target as a glob pattern when it differs from it (see
	// patternOf), else "".
	pattern string
}

// Wrapper is one stripped wrapper and its own words, e.g. sudo -u root.
type Wrapper struct {
	// Program is the wrapper's basename ("sudo").
	Program string
	// Argv is the wrapper with its own options ("sudo", "-u", "root").
	Argv []string
}

// Parse parses a command string as bash and returns its flat list of
// simple commands. It never fails: a string that does not parse yields
// OK == false. It is safe for concurrent use. Each call parses afresh;
// memoise the result when the same string is asked about repeatedly.
func Parse(cmd string) *Line {
	p := shellParsers.Get().(*syntax.Parser)
	defer shellParsers.Put(p)
	return parseShellWith(p, cmd, true)
}

// shellParsers pools parsers, which are reusable but not concurrency-safe.
var shellParsers = sync.Pool{New: func() any { return newShellParser() }}

func newShellParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}

// parseShellWith parses cmd with p; fast allows the fast path for plain
// commands (see shellWalker.fast). The Line it returns keeps the Bounds of
// the part of cmd it parsed.
func parseShellWith(p *syntax.Parser, cmd string, fast bool) *Line {
	b := SizeBounds(utf8.RuneCountInString(cmd[:min(len(cmd), MaxInput)]))
	res := walkShell(p, cmd, fast, b.Commands)
	res.addDialectHazards(cmd)
	res.enforceBounds(b)
	return res
}

// walkShell is parseShellWith before the Bounds are enforced; the walk
// stops after maxCommands commands (see shellWalker.add).
func walkShell(p *syntax.Parser, cmd string, fast bool, maxCommands int) *Line {
	if p == nil {
		p = newShellParser()
	}
	res := &Line{OK: true}
	w := &shellWalker{res: res, parser: p, maxCommands: maxCommands}
	if fast && len(cmd) <= MaxInput && w.fast(cmd) {
		markLastLinks(res)
		return res
	}
	if len(cmd) > MaxInput {
		res.OK = false
		res.Error = fmt.Sprintf("command is longer than %d bytes", MaxInput)
		w.fallback(cmd[:MaxInput])
		return res
	}
	if n := bracketNesting(cmd); n > MaxNesting {
		res.OK = false
		res.Error = fmt.Sprintf("brackets nested deeper than %d levels", MaxNesting)
		w.fallback(cmd)
		return res
	}
	f, err := w.parse(cmd)
	if err != nil {
		res.OK = false
		res.Error = err.Error()
		w.fallback(cmd)
		return res
	}
	w.src = cmd
	w.stmts(f.Stmts)
	markLastLinks(res)
	return res
}

// markLastLinks marks a symbolic ln that is the line's last command: the
// link it makes is only a name until something writes through it, which no
// later command of the line does (a later call is judged by where the link
// points: stdlib.WithSymlinks), so its targets are not its writes.
func markLastLinks(l *Line) {
	if n := len(l.Commands); n > 0 {
		if c := l.Commands[n-1]; c.Program == "ln" && c.Via == "" && c.HasFlag("-s|--symbolic") {
			c.linkOnly = true
		}
	}
}

// bracketNesting returns an upper bound of the nesting depth of ( ) { } in a
// command, skipping single-quoted text and escaped characters.
func bracketNesting(s string) int {
	depth, max := 0, 0
	inDouble := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '\'' && !inDouble:
			if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
				i += j + 1
			} else {
				i = len(s)
			}
		case c == '"':
			inDouble = !inDouble
		case c == '(' || c == '{':
			depth++
			if depth > max {
				max = depth
			}
		case c == ')' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return max
}

// shellWalker flattens a parsed script into ShellCommands.
type shellWalker struct {
	res    *Line
	parser *syntax.Parser
	src    string
	vars   map[string]string // literal values assigned so far

	depth      int
	via        string
	wrappers   []Wrapper  // inherited by commands of a nested script
	upstream   []string   // programs of earlier pipeline stages
	redirs     []Redirect // of enclosing compound commands
	background bool
	// maxCommands is Bounds.Commands of the string Parse was given: the
	// walk stops there, as the rest would be cut off.
	maxCommands int
	full        bool // maxCommands reached
	// skip are the ranges of src that an enclosing shell expanded before
	// running src as a script (bash -c "$(curl x)"): the substitutions
	// there were listed at that shell's level and are not walked again.
	skip []shellSpan
}

func (w *shellWalker) parse(src string) (f *syntax.File, err error) {
	defer func() {
		// The parser is not expected to panic, but a policy engine must not
		// crash on an adversarial command.
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("shell parser panic: %v", r)
		}
	}()
	return w.parser.Parse(strings.NewReader(src), "")
}

func (w *shellWalker) opaque(reason string) {
	w.res.Opaque = true
	for _, r := range w.res.OpaqueReasons {
		if r == reason {
			return
		}
	}
	w.res.OpaqueReasons = append(w.res.OpaqueReasons, reason)
}

func (w *shellWalker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

func (w *shellWalker) stmt(s *syntax.Stmt) {
	if s == nil || w.full {
		return
	}
	redirs := w.redirects(s.Redirs)
	savedBg := w.background
	if s.Background {
		w.background = true
	}
	defer func() { w.background = savedBg }()
	switch c := s.Cmd.(type) {
	case nil:
		if len(redirs) > 0 {
			w.add(&Command{Redirects: append(redirs, w.redirs...), Text: w.text(s)})
		}
		return
	case *syntax.CallExpr:
		w.call(s, c, redirs)
		return
	case *syntax.DeclClause:
		w.decl(s, c, redirs)
		return
	}
	// A compound command: its redirections apply to every command inside.
	savedRedirs := w.redirs
	if len(redirs) > 0 {
		w.redirs = append(append([]Redirect(nil), redirs...), w.redirs...)
		if len(w.redirs) > MaxInheritedRedirects {
			w.redirs = w.redirs[:MaxInheritedRedirects]
		}
	}
	defer func() { w.redirs = savedRedirs }()
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.pipeline(c)
		} else {
			w.stmt(c.X)
			w.stmt(c.Y)
		}
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond)
			w.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		w.substs(c.Loop)
		w.stmts(c.Do)
	case *syntax.CaseClause:
		w.substs(c.Word)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.substs(p)
			}
			w.stmts(it.Stmts)
		}
	case *syntax.FuncDecl:
		w.stmt(c.Body)
	case *syntax.ArithmCmd:
		w.substs(c.X)
	case *syntax.TestClause:
		w.substs(c.X)
	case *syntax.LetClause:
		for _, x := range c.Exprs {
			w.substs(x)
		}
	case *syntax.TimeClause:
		if c.Stmt != nil {
			saved := w.wrappers
			w.wrappers = appendWrapper(w.wrappers, Wrapper{Program: "time", Argv: []string{"time"}})
			w.stmt(c.Stmt)
			w.wrappers = saved
		}
	case *syntax.CoprocClause:
		w.stmt(c.Stmt)
	case *syntax.TestDecl:
		w.stmt(c.Body)
	}
}

// pipeline walks the stages of a | b | c, recording for each stage the
// programs of the earlier ones.
func (w *shellWalker) pipeline(c *syntax.BinaryCmd) {
	var buf [8]*syntax.Stmt
	stages := flattenPipe(flattenPipe(buf[:0], c.X), c.Y)
	saved := w.upstream
	// Each stage sees a length-clipped view of one growing slice, so a long
	// pipeline costs linear, not quadratic, time and memory.
	up := append([]string(nil), saved...)
	for _, st := range stages {
		w.upstream = up[:len(up):len(up)]
		start := len(w.res.Commands)
		w.stmt(st)
		for _, cmd := range w.res.Commands[start:] {
			if cmd.Depth == w.depth && cmd.Program != "" {
				up = append(up, cmd.Program)
			}
		}
	}
	w.upstream = saved
}

// flattenPipe appends the stages of a pipeline statement to stages.
func flattenPipe(stages []*syntax.Stmt, s *syntax.Stmt) []*syntax.Stmt {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
		return flattenPipe(flattenPipe(stages, b.X), b.Y)
	}
	return append(stages, s)
}

// redirects converts redirections, walking the substitutions in their words
// and here-document bodies.
func (w *shellWalker) redirects(rs []*syntax.Redirect) []Redirect {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Redirect, 0, len(rs))
	for _, r := range rs {
		sr := Redirect{Op: r.Op.String()}
		if r.N != nil {
			sr.FD = r.N.Value
		}
		var spans *[]shellSpan
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
			spans = &sr.bodySpans
		}
		if r.Word != nil {
			w.substs(r.Word)
			var tspans *[]shellSpan
			if r.Op == syntax.WordHdoc {
				tspans = spans
			}
			tw := w.shellWord(r.Word, false, tspans)
			sr.Target, sr.Dynamic = tw.text, tw.dyn
			sr.pattern, _ = w.patternOf(tw, false)
		}
		switch {
		case r.Hdoc != nil:
			w.substs(r.Hdoc)
			sr.Body = w.shellWord(r.Hdoc, true, spans).text
		case r.Op == syntax.WordHdoc:
			sr.Body = sr.Target
		}
		// A here-document whose body the shell expands ($x, $( ), ` `
		// outside a quoted delimiter) is only known when it runs.
		sr.Dynamic = sr.Dynamic || len(sr.bodySpans) > 0
		out = append(out, sr)
	}
	return out
}

// substs walks the command and process substitutions inside a node, adding
// the commands they run one level deeper.
func (w *shellWalker) substs(n syntax.Node) {
	if n == nil || w.full || plainNode(n) {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			if !w.skipped(x) {
				w.nested("$()", nil, func() { w.stmts(x.Stmts) })
			}
			return false
		case *syntax.ProcSubst:
			if w.skipped(x) {
				return false
			}
			via := "<()"
			if x.Op == syntax.CmdOut {
				via = ">()"
			}
			w.nested(via, nil, func() { w.stmts(x.Stmts) })
			return false
		}
		return true
	})
}

// plainNode reports, cheaply, that a node holds no substitution: a word
// (or an assignment of a word) made only of literals and quoted text.
func plainNode(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.Word:
		return plainParts(x.Parts)
	case *syntax.Assign:
		return x.Index == nil && x.Array == nil && (x.Value == nil || plainParts(x.Value.Parts))
	}
	return false
}

func plainParts(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !plainParts(x.Parts) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// skipped reports whether a node lies in a range of src that an enclosing
// shell expanded (see shellWalker.skip).
func (w *shellWalker) skipped(n syntax.Node) bool {
	if len(w.skip) == 0 {
		return false
	}
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	for _, sp := range w.skip {
		if a < sp.b && b > sp.a {
			return true
		}
	}
	return false
}

// nested runs walk one level deeper, in a fresh context.
func (w *shellWalker) nested(via string, wrappers []Wrapper, walk func()) {
	if w.depth+1 > MaxDepth {
		w.opaque(fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		return
	}
	saved := *w
	w.depth++
	w.via = via
	w.wrappers = wrappers
	w.upstream = nil
	w.redirs = nil
	w.background = false
	walk()
	res, full, vars := w.res, w.full, w.vars
	*w = saved
	w.res, w.full, w.vars = res, full, vars
}

// nestedScript parses and walks a script found in a word (bash -c, eval, a
// here-document fed to a shell).
func (w *shellWalker) nestedScript(script, via string, wrappers []Wrapper, skip []shellSpan) {
	if w.depth+1 > MaxDepth {
		w.opaque(fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		return
	}
	f, err := w.parse(script)
	if err != nil {
		w.opaque(fmt.Sprintf("%s script does not parse: %v", via, err))
		return
	}
	w.nested(via, wrappers, func() {
		w.src = script
		w.skip = skip
		w.stmts(f.Stmts)
	})
}

func (w *shellWalker) add(c *Command) {
	if len(w.res.Commands) >= w.maxCommands {
		w.full = true
		if w.maxCommands == MaxCommands {
			w.opaque(fmt.Sprintf("more than %d commands", MaxCommands))
		} else {
			w.opaque(ReasonOverBounds) // only expansions make this many
		}
		return
	}
	c.Depth = w.depth
	c.Via = w.via
	c.Background = c.Background || w.background
	if len(w.upstream) > 0 {
		c.Upstream = w.upstream // shared and clipped: never appended to through c
	}
	if len(w.wrappers) > 0 {
		c.Wrappers = append(append([]Wrapper(nil), w.wrappers...), c.Wrappers...)
	}
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	if c.Argv == nil {
		c.Argv = []string{}
		c.ArgvDynamic = []bool{}
	}
	w.res.Commands = append(w.res.Commands, c)
}

func (w *shellWalker) text(n syntax.Node) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(w.src) || a > b {
		return ""
	}
	return w.src[a:b]
}

// call handles a simple command.
func (w *shellWalker) call(s *syntax.Stmt, c *syntax.CallExpr, redirs []Redirect) {
	for _, a := range c.Assigns {
		w.substs(a)
	}
	for _, a := range c.Args {
		w.substs(a)
	}
	if len(c.Args) == 0 {
		// Assignments only: they set shell variables.
		for _, a := range c.Assigns {
			w.assign(a)
		}
		if len(redirs) > 0 {
			w.add(&Command{Env: w.assignEnv(c.Assigns), Redirects: append(redirs, w.redirs...), Text: w.text(s)})
		}
		return
	}
	words := make([]shellWord, 0, len(c.Args))
	for _, a := range c.Args {
		words = w.argWords(a, words)
	}
	if len(words) == 0 {
		// Every word expanded to nothing (x=; $x): no program runs.
		if len(redirs) > 0 {
			w.add(&Command{Env: w.assignEnv(c.Assigns), Redirects: append(redirs, w.redirs...), Text: w.text(s)})
		}
		return
	}
	w.emit(words, w.assignEnv(c.Assigns), append(redirs, w.redirs...), w.text(s))
}

// decl handles export/declare/local/readonly/typeset/nameref, which set
// variables and are also commands in their own right.
func (w *shellWalker) decl(s *syntax.Stmt, c *syntax.DeclClause, redirs []Redirect) {
	words := []shellWord{{text: c.Variant.Value}}
	for _, a := range c.Args {
		w.substs(a)
		w.assign(a)
		var sw shellWord
		switch {
		case a.Name != nil && a.Naked:
			sw.text = a.Name.Value
		case a.Name != nil:
			v, dyn, res := "", false, false
			if a.Value != nil {
				v, dyn, res = w.word(a.Value)
			} else if a.Array != nil {
				v, dyn = w.text(a.Array), true
			}
			sw = shellWord{text: a.Name.Value + "=" + v, dyn: dyn, resolved: res}
		case a.Value != nil:
			sw.text, sw.dyn, sw.resolved = w.word(a.Value)
		}
		words = append(words, sw)
	}
	w.emit(words, nil, append(redirs, w.redirs...), w.text(s))
}

func (w *shellWalker) assign(a *syntax.Assign) {
	if a == nil || a.Name == nil || a.Naked {
		return
	}
	if w.vars == nil {
		w.vars = map[string]string{}
	}
	if a.Value == nil && a.Array == nil && a.Index == nil && !a.Append {
		w.vars[a.Name.Value] = "" // x=
		return
	}
	if a.Value == nil || a.Index != nil || a.Append {
		delete(w.vars, a.Name.Value)
		return
	}
	v, dyn, resolved := w.word(a.Value)
	if dyn && !resolved {
		delete(w.vars, a.Name.Value)
		return
	}
	if len(v) > maxVarValue(len(w.src)) {
		// Values built from values (A=$B$B) can grow exponentially with
		// the command's length: past a bound the value is unknown, and
		// the command cannot be seen through.
		delete(w.vars, a.Name.Value)
		w.opaque("a variable's value grows longer than the command itself")
		return
	}
	w.vars[a.Name.Value] = v
}

// maxVarValue bounds the length of a variable value the walker carries
// forward: the length of the script it appears in, and at least 4 KiB.
func maxVarValue(srcLen int) int { return max(srcLen, 4096) }

func (w *shellWalker) assignEnv(as []*syntax.Assign) map[string]string {
	if len(as) == 0 {
		return nil
	}
	env := make(map[string]string, len(as))
	for _, a := range as {
		if a.Name == nil {
			continue
		}
		switch {
		case a.Value != nil:
			env[a.Name.Value], _, _ = w.word(a.Value)
		case a.Array != nil:
			env[a.Name.Value] = w.text(a.Array)
		default:
			env[a.Name.Value] = ""
		}
	}
	return env
}

// emit strips wrappers from words, records the command and walks what it
// runs in turn (shell -c scripts, eval, find -exec, here-documents fed to a
// shell).
func (w *shellWalker) emit(words []shellWord, env map[string]string, redirs []Redirect, text string) {
	rest, wrappers, wenv := w.stripCommandWords(words)
	if len(wenv) > 0 {
		if env == nil {
			env = map[string]string{}
		}
		for k, v := range wenv {
			env[k] = v
		}
	}
	cmd := &Command{
		Path:      rest[0].text,
		Program:   programOf(rest[0]),
		Argv:      make([]string, len(rest)),
		Env:       env,
		Redirects: redirs,
		Wrappers:  wrappers,
		Text:      text,
	}
	cmd.ArgvDynamic = make([]bool, len(rest))
	for i, x := range rest {
		cmd.Argv[i] = x.text
		cmd.ArgvDynamic[i] = x.dyn
		if x.dyn && x.resolved {
			if cmd.argvResolved == nil {
				cmd.argvResolved = make([]bool, len(rest))
			}
			cmd.argvResolved[i] = true
		}
		if p, ok := w.patternOf(x, true); ok {
			if cmd.argvPattern == nil {
				cmd.argvPattern = make([]string, len(rest))
			}
			cmd.argvPattern[i] = p
		}
	}
	if rest[0].dyn && !rest[0].resolved {
		w.opaque("program name is not a literal: " + rest[0].text)
	}
	w.add(cmd)
	if w.full {
		return
	}
	w.follow(cmd, rest)
}

// follow walks the scripts a command runs itself.
func (w *shellWalker) follow(cmd *Command, rest []shellWord) {
	chain := cmd.Wrappers
	switch {
	case shellPrograms()[cmd.Program]:
		script, ok := shellScriptArg(rest)
		if ok {
			if script.dyn && !script.resolved {
				w.opaque(cmd.Program + " -c script is not a literal")
			}
			wr := appendWrapper(chain, Wrapper{Program: cmd.Program, Argv: wordTexts(rest[:scriptIndex(rest)])})
			w.nestedScriptQuiet(script.text, "-c", wr, script.dyn && !script.resolved, w.wordSpans(script, 0, nil))
			return
		}
		if shellReadsStdin(rest) {
			for _, r := range cmd.Redirects {
				if r.Op == "<<" || r.Op == "<<-" || r.Op == "<<<" {
					wr := appendWrapper(chain, Wrapper{Program: cmd.Program, Argv: wordTexts(rest)})
					w.nestedScriptQuiet(r.Body, "<<", wr, false, r.bodySpans)
					break
				}
			}
		}
	case cmd.Program == "eval" && len(rest) > 1:
		dyn := false
		for _, x := range rest[1:] {
			dyn = dyn || (x.dyn && !x.resolved)
		}
		if dyn {
			w.opaque("eval of a non-literal")
		}
		wr := appendWrapper(chain, Wrapper{Program: "eval", Argv: []string{"eval"}})
		var skip []shellSpan
		off := 0
		for _, x := range rest[1:] {
			skip = w.wordSpans(x, off, skip)
			off += len(x.text) + 1
		}
		w.nestedScriptQuiet(strings.Join(wordTexts(rest[1:]), " "), "eval", wr, dyn, skip)
	case cmd.Program == "find":
		// Each {} of an -exec's command stands for a path find matched:
		// the command is analysed once per starting point with {} as the
		// pattern of what find may match there (rm -rf {} writes
		// ROOT/**/NAME and its tree), so its writes are where find goes.
		matches := scanFind(cmd.Args()).matches()
		if len(matches) > maxFindRoots {
			matches = []string{"/**"}
		}
		for _, ex := range findExecs(rest) {
			if len(ex) == 0 {
				continue
			}
			wr := appendWrapper(chain, Wrapper{Program: "find", Argv: []string{"find", "-exec"}})
			text := strings.Join(wordTexts(ex), " ")
			for _, m := range matches {
				w.nested("find -exec", wr, func() { w.emitFindExec(ex, m, text) })
			}
		}
	}
}

// emitFindExec emits the command of a find -exec with each word holding {}
// read, for its writes, as that word with {} replaced by match (the
// pattern of the paths find passes). Its text and argv are as written.
func (w *shellWalker) emitFindExec(ex []shellWord, match, text string) {
	before := len(w.res.Commands)
	w.emit(ex, nil, nil, text)
	if len(w.res.Commands) <= before {
		return
	}
	c := w.res.Commands[before]
	for i, a := range c.Argv {
		if i == 0 || !strings.Contains(a, "{}") {
			continue
		}
		if c.argvFind == nil {
			c.argvFind = make([]string, len(c.Argv))
		}
		c.argvFind[i] = strings.ReplaceAll(escapeGlob(a), "[{][}]", match)
	}
}

// nestedScriptQuiet parses a nested script; when the script is known to be
// partly dynamic a parse failure is expected and not reported again.
func (w *shellWalker) nestedScriptQuiet(script, via string, wrappers []Wrapper, dynamic bool, skip []shellSpan) {
	if !dynamic {
		w.nestedScript(script, via, wrappers, skip)
		return
	}
	if w.depth+1 > MaxDepth {
		w.opaque(fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		return
	}
	f, err := w.parse(script)
	if err != nil {
		return
	}
	w.nested(via, wrappers, func() {
		w.src = script
		w.skip = skip
		w.stmts(f.Stmts)
	})
}

func appendWrapper(ws []Wrapper, more ...Wrapper) []Wrapper {
	out := make([]Wrapper, 0, len(ws)+len(more))
	return append(append(out, ws...), more...)
}

func wordTexts(ws []shellWord) []string {
	out := make([]string, len(ws))
	for i, x := range ws {
		out[i] = x.text
	}
	return out
}

// ProgramName returns the program a literal argv[0] names, as in
// Command.Program: its basename, git for /usr/bin/git (trailing slashes
// ignored; a path of slashes only is returned as is).
func ProgramName(p string) string {
	q := strings.TrimRight(p, "/")
	if q == "" {
		return p
	}
	if i := strings.LastIndexByte(q, '/'); i >= 0 {
		return q[i+1:]
	}
	return q
}

// wordSpans appends to acc the ranges of a rendered word that hold an
// unresolved expansion, shifted by off.
func (w *shellWalker) wordSpans(sw shellWord, off int, acc []shellSpan) []shellSpan {
	if sw.src == nil || !sw.dyn || sw.resolved {
		return acc
	}
	var spans []shellSpan
	var b strings.Builder
	w.parts(&b, sw.src.Parts, modeUnquoted, &wordState{arg: true, spans: &spans})
	for _, sp := range spans {
		acc = append(acc, shellSpan{sp.a + off, sp.b + off})
	}
	return acc
}

// maxBraceWords bounds the words a brace expansion in the command position
// may produce (also at most one per two bytes of the word); a larger one is
// not expanded and makes the parse opaque.
const maxBraceWords = 1024

// stripCommandWords strips the wrappers from the front of a command's words
// (see stripWrappers). A brace expansion in the command position, before or
// after a wrapper, is expanded first, as bash does: {rm,-rf,/} runs rm -rf /.
func (w *shellWalker) stripCommandWords(words []shellWord) ([]shellWord, []Wrapper, map[string]string) {
	words, _ = w.expandHeadBraces(words)
	rest, wrappers, env := stripWrappers(words)
	for i := 0; i < 8 && len(wrappers) > 0; i++ {
		exp, ok := w.expandHeadBraces(rest)
		if !ok {
			break
		}
		var more []Wrapper
		var menv map[string]string
		rest, more, menv = stripWrappers(exp)
		wrappers = append(wrappers, more...)
		for k, v := range menv {
			if env == nil {
				env = map[string]string{}
			}
			env[k] = v
		}
	}
	return w.expandArgBraces(rest), wrappers, env
}

// expandArgBraces expands brace expansions in the arguments, as bash does:
// rm -rf {/,x} removes / and x. Together they may add at most
// maxBraceWords words (and one per two bytes of each word); past that the
// words stay as written and the parse is opaque.
func (w *shellWalker) expandArgBraces(words []shellWord) []shellWord {
	var out []shellWord
	budget := maxBraceWords
	for i, wd := range words {
		if i == 0 || wd.src == nil || strings.IndexByte(wd.text, '{') < 0 {
			if out != nil {
				out = append(out, wd)
			}
			continue
		}
		exp, ok := w.expandBraces([]shellWord{wd})
		if !ok {
			if out != nil {
				out = append(out, wd)
			}
			continue
		}
		if budget -= len(exp); budget < 0 {
			w.opaque("brace expansion in the arguments is too large")
			return words
		}
		if out == nil {
			out = append(make([]shellWord, 0, len(words)+len(exp)), words[:i]...)
		}
		out = append(out, exp...)
	}
	if out == nil {
		return words
	}
	return out
}

// expandHeadBraces replaces the first word, when it holds a brace
// expansion, by the words it expands to. ok says whether it did.
func (w *shellWalker) expandHeadBraces(words []shellWord) ([]shellWord, bool) {
	if len(words) == 0 || words[0].src == nil || strings.IndexByte(words[0].text, '{') < 0 {
		return words, false
	}
	return w.expandBraces(words)
}

// expandBraces is the rare part of expandHeadBraces, apart so that the
// common case allocates nothing.
func (w *shellWalker) expandBraces(words []shellWord) ([]shellWord, bool) {
	cp := *words[0].src
	if !syntax.SplitBraces(&cp) {
		return words, false
	}
	// At most one word per two bytes of source, so a command has no more
	// words than bytes/2+1 (stdlib's static cost estimates assume this).
	limit := min(maxBraceWords, (max(len(w.text(words[0].src)), len(words[0].text))+1)/2)
	var out []shellWord
	for x, err := range expand.BracesSeq(nil, &cp) {
		if err != nil || len(out) >= limit {
			w.opaque("a brace expansion is too large")
			return words, false
		}
		sw := w.shellWord(x, false, nil)
		if sw.text == "" && !sw.dyn {
			continue // an unquoted empty word is removed
		}
		out = append(out, sw)
	}
	if len(out) == 0 {
		return words, false
	}
	return append(out, words[1:]...), true
}

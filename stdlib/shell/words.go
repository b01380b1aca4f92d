package shell

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// shellWord is one rendered word: quotes removed, expansions in source form
// (or substituted when a literal value is known).
type shellWord struct {
	text     string
	dyn      bool // contains an expansion
	resolved bool // every expansion was a variable with a known literal value
	// tail is the offset in text where the literal text after the last
	// unresolved expansion starts (0 for a word without one).
	tail int
	src  *syntax.Word // the parsed word, nil for words of the fallback split
	// field is true for a field split from an unquoted value (x='a b'; $x):
	// the shell globs it as it stands.
	field bool
}

// shellSpan is a byte range [a, b) of a rendered word or script.
type shellSpan struct{ a, b int }

// Rendering modes of literal text.
const (
	modeUnquoted = iota // backslash escapes any character
	modeDouble          // inside "": backslash escapes $ ` " \ and newline
	modeHeredoc         // unquoted here-document: $ ` \ and newline
	modeRaw             // quoted here-document: no escapes
)

func (w *shellWalker) word(wd *syntax.Word) (string, bool, bool) {
	sw := w.shellWord(wd, false, nil)
	return sw.text, sw.dyn, sw.resolved
}

// shellWord renders a word. When spans is not nil, the ranges of the
// rendered text that hold an unresolved expansion in source form are
// appended to it.
func (w *shellWalker) shellWord(wd *syntax.Word, hdoc bool, spans *[]shellSpan) shellWord {
	if wd == nil {
		return shellWord{}
	}
	// Fast path: a word that is one literal with nothing to unescape, or
	// one plain single-quoted string, is its own text.
	if len(wd.Parts) == 1 {
		switch x := wd.Parts[0].(type) {
		case *syntax.Lit:
			if !strings.Contains(x.Value, `\`) {
				return shellWord{text: x.Value, src: wd}
			}
		case *syntax.SglQuoted:
			if !x.Dollar {
				return shellWord{text: x.Value, src: wd}
			}
		}
	}
	mode := modeUnquoted
	if hdoc {
		mode = modeHeredoc
	}
	var b strings.Builder
	st := wordState{spans: spans}
	w.parts(&b, wd.Parts, mode, &st)
	return shellWord{text: b.String(), dyn: st.dyn, resolved: st.dyn && !st.unresolved, tail: st.tail, src: wd}
}

// ifsBlanks are the characters of the default IFS.
const ifsBlanks = " \t\n"

// argWords renders a word of a simple command. An unquoted $NAME whose
// known value holds blanks is split into fields, as bash does
// (x='rm -rf /'; $x runs rm); one whose value is empty is removed.
func (w *shellWalker) argWords(wd *syntax.Word, out []shellWord) []shellWord {
	if len(wd.Parts) == 1 {
		if pe, ok := wd.Parts[0].(*syntax.ParamExp); ok {
			if name, ok := simpleParam(pe); ok {
				if v, known := w.vars[name]; known && (v == "" || strings.ContainsAny(v, ifsBlanks)) {
					for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) {
						out = append(out, shellWord{text: f, dyn: true, resolved: true, src: wd, field: true})
					}
					return out
				}
			}
		}
	}
	if len(wd.Parts) == 1 {
		if _, ok := wd.Parts[0].(*syntax.Lit); ok {
			return append(out, w.shellWord(wd, false, nil))
		}
	}
	mode := modeUnquoted
	var b strings.Builder
	st := wordState{arg: true}
	w.parts(&b, wd.Parts, mode, &st)
	return append(out, shellWord{text: b.String(), dyn: st.dyn, resolved: st.dyn && !st.unresolved, tail: st.tail, src: wd})
}

type wordState struct {
	dyn, unresolved bool
	arg             bool // a command word: unquoted values are split into fields
	tail            int  // end of the last unresolved expansion
	spans           *[]shellSpan
	// pat, when set, receives the word as a glob pattern beside its text:
	// the characters the shell takes literally (quoted, escaped, or from
	// a quoted expansion) escaped with a backslash when they are glob
	// syntax, the rest as written (see patternOf).
	pat *strings.Builder
}

// unresolvedText writes the source text of an unresolved expansion.
func (w *shellWalker) unresolvedText(b *strings.Builder, n syntax.Node, st *wordState) {
	st.dyn = true
	st.unresolved = true
	a := b.Len()
	b.WriteString(w.text(n))
	st.tail = b.Len()
	if st.spans != nil {
		*st.spans = append(*st.spans, shellSpan{a, st.tail})
	}
}

func (w *shellWalker) parts(b *strings.Builder, parts []syntax.WordPart, mode int, st *wordState) {
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeShell(x.Value, mode))
			if st.pat != nil {
				if mode == modeUnquoted {
					litPattern(st.pat, x.Value)
				} else {
					escapeGlobTo(st.pat, unescapeShell(x.Value, mode))
				}
			}
		case *syntax.SglQuoted:
			v := x.Value
			if x.Dollar {
				v = ansiC(x.Value)
			}
			b.WriteString(v)
			if st.pat != nil {
				escapeGlobTo(st.pat, v)
			}
		case *syntax.DblQuoted:
			w.parts(b, x.Parts, modeDouble, st)
		case *syntax.ParamExp:
			if name, caseOp, ok := caseParam(x); ok {
				// An unquoted value with blanks would be split into several
				// words (see argWords); inside a larger word it is unknown.
				if v, known := w.vars[name]; known && !(st.arg && mode == modeUnquoted && strings.ContainsAny(v, ifsBlanks)) {
					v = caseOp(v)
					st.dyn = true
					b.WriteString(v)
					if st.pat != nil {
						// An unquoted value is globbed, a quoted one is not.
						if mode == modeUnquoted {
							st.pat.WriteString(v)
						} else {
							escapeGlobTo(st.pat, v)
						}
					}
					continue
				}
			}
			w.unresolvedText(b, x, st)
		case *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst:
			w.unresolvedText(b, x, st)
		default: // ExtGlob, BraceExp: patterns expanded by the shell, kept as written
			t := w.text(x)
			b.WriteString(t)
			if st.pat != nil {
				st.pat.WriteString(t)
			}
		}
	}
}

// globSyntax are the characters that make a word's text a pattern to
// the readers of shell.writes: doublestar's wildcards, classes and braces,
// and the parentheses of extglob and zsh alternation.
const globSyntax = "*?[]{}()"

// escapeGlobTo writes s as a pattern that matches s alone: each character
// that is glob syntax (and the "," of brace alternatives) as a class of
// itself ([*], [(]). A class, not a backslash: path.normal reads a
// backslash as a Windows separator. A "]" outside a class is literal and
// stays; a backslash stays a backslash.
func escapeGlobTo(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', '{', '}', '(', ')', ',':
			b.WriteByte('[')
			b.WriteByte(c)
			b.WriteByte(']')
		default:
			b.WriteByte(c)
		}
	}
}

// litPattern writes an unquoted literal as a pattern: a character the
// shell escapes with a backslash is literal (escaped in the pattern), the
// others are glob syntax as written; a backslash-newline is removed.
func litPattern(b *strings.Builder, raw string) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			i++
			if raw[i] != '\n' {
				escapeGlobTo(b, raw[i:i+1])
			}
			continue
		}
		b.WriteByte(c)
	}
}

// patternOf is the word as a glob pattern, when it differs from its text:
// a word whose text holds a glob character that the shell takes literally
// ('a*', "x(1)", \[, "$v" with a value holding one) has it escaped with a
// backslash, so that glob.couldMatch and glob.match read it as the one
// name it is. A word of the fallback split, or a field split from an
// unquoted value, is globbed as it stands: its text is its pattern. ok is
// false when the pattern is the text.
func (w *shellWalker) patternOf(sw shellWord, arg bool) (pat string, ok bool) {
	if sw.src == nil || sw.field || !strings.ContainsAny(sw.text, globSyntax) {
		return "", false
	}
	var b, p strings.Builder
	st := wordState{arg: arg, pat: &p}
	mode := modeUnquoted
	w.parts(&b, sw.src.Parts, mode, &st)
	if b.String() != sw.text || p.String() == sw.text {
		// Not this word's rendering (a word split by a wrapper): its text
		// is the safe side.
		return "", false
	}
	return p.String(), true
}

// programOf is the program a command word names: the basename of the word.
// For a word that is not a literal, the basename is taken only when the
// last path component is literal text ("$X"/bin/rm is rm); otherwise the
// program is the word as written ($(echo rm), /opt/$TOOL), which holds a $,
// a ` or a <( and so is never mistaken for a real program.
func programOf(sw shellWord) string {
	if !sw.dyn || sw.resolved {
		return ProgramName(sw.text)
	}
	tail := sw.tail
	if sw.src == nil {
		tail = fallbackTail(sw.text)
	}
	if tail > len(sw.text) {
		tail = len(sw.text)
	}
	if i := strings.LastIndexByte(sw.text, '/'); i >= tail && i+1 < len(sw.text) {
		return sw.text[i+1:]
	}
	return sw.text
}

// fallbackTail estimates, for a word of the fallback split, where the
// literal text after its last $NAME or ${...} starts.
func fallbackTail(t string) int {
	i := strings.LastIndexByte(t, '$')
	if i < 0 {
		return 0
	}
	j := i + 1
	if j < len(t) && t[j] == '{' {
		if k := strings.IndexByte(t[j:], '}'); k >= 0 {
			return j + k + 1
		}
		return len(t)
	}
	for j < len(t) && (t[j] == '_' || ('a' <= t[j] && t[j] <= 'z') || ('A' <= t[j] && t[j] <= 'Z') || ('0' <= t[j] && t[j] <= '9')) {
		j++
	}
	return j
}

// caseParam reads $NAME, ${NAME}, and the case changes bash applies to a
// whole value (${NAME,,} ${NAME^^} ${NAME,} ${NAME^}, ${NAME@L} ${NAME@U}
// ${NAME@u}), so that f=.ENV; cat ${f,,} names .env: the name and the
// change to make to its value.
func caseParam(p *syntax.ParamExp) (string, func(string) string, bool) {
	same := func(s string) string { return s }
	if name, ok := simpleParam(p); ok {
		return name, same, true
	}
	if p.Exp == nil {
		return "", nil, false
	}
	e := *p
	e.Exp = nil
	name, ok := simpleParam(&e)
	if !ok {
		return "", nil, false
	}
	arg := ""
	if p.Exp.Word != nil {
		if len(p.Exp.Word.Parts) != 1 {
			return "", nil, false
		}
		lit, isLit := p.Exp.Word.Parts[0].(*syntax.Lit)
		if !isLit {
			return "", nil, false
		}
		arg = lit.Value
	}
	first := func(f func(string) string) func(string) string {
		return func(s string) string {
			if s == "" {
				return s
			}
			_, n := utf8.DecodeRuneInString(s)
			return f(s[:n]) + s[n:]
		}
	}
	switch {
	case p.Exp.Op == syntax.LowerAll && arg == "", p.Exp.Op == syntax.OtherParamOps && arg == "L":
		return name, strings.ToLower, true
	case p.Exp.Op == syntax.UpperAll && arg == "", p.Exp.Op == syntax.OtherParamOps && arg == "U":
		return name, strings.ToUpper, true
	case p.Exp.Op == syntax.LowerFirst && arg == "":
		return name, first(strings.ToLower), true
	case p.Exp.Op == syntax.UpperFirst && arg == "", p.Exp.Op == syntax.OtherParamOps && arg == "u":
		return name, first(strings.ToUpper), true
	}
	return "", nil, false
}

func simpleParam(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Flags != nil || p.Excl || p.Length || p.Width || p.IsSet ||
		p.NestedParam != nil || p.Index != nil || len(p.Modifiers) > 0 || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	return p.Param.Value, true
}

func unescapeShell(s string, mode int) string {
	if mode == modeRaw || !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch mode {
		case modeUnquoted:
			i++
			if n != '\n' {
				b.WriteByte(n)
			}
		case modeDouble, modeHeredoc:
			switch {
			case n == '$' || n == '`' || n == '\\' || (n == '"' && mode == modeDouble):
				b.WriteByte(n)
				i++
			case n == '\n':
				i++
			default:
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

// ansiC decodes the escapes of a $'...' string.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j-i-1 < max && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(v))
			} else if r := rune(v); utf8.ValidRune(r) {
				b.WriteRune(r)
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 32)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// wrapperSpec describes a program that runs another program given in its
// arguments, and how to skip its own options to find it.
type wrapperSpec struct {
	valueShort  string          // short options that take a value: "ug" for -u X -g Y
	valueLong   map[string]bool // long options that take a separate value
	assignments bool            // NAME=value words may follow the options (env, sudo)
	positionals int             // words after the options before the command (timeout's duration)
	stopShort   string          // short options meaning "does not run the command" (command -v)
	splitShort  string          // env -S "cmd args": the value is a command line
}

func longs(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// wrapperSpecs are the programs stripped to reach the real program.
var wrapperSpecs = sync.OnceValue(func() map[string]wrapperSpec {
	return map[string]wrapperSpec{
		"sudo": {valueShort: "ugpChDrtUT", valueLong: longs("--user", "--group", "--host", "--prompt", "--close-from",
			"--chdir", "--role", "--type", "--other-user", "--command-timeout"), assignments: true, stopShort: "elvV"},
		"doas":    {valueShort: "uC", stopShort: "L"},
		"env":     {valueShort: "uCS", valueLong: longs("--unset", "--chdir", "--split-string"), assignments: true, splitShort: "S"},
		"timeout": {valueShort: "sk", valueLong: longs("--signal", "--kill-after"), positionals: 1},
		"nice":    {valueShort: "n", valueLong: longs("--adjustment")},
		"nohup":   {},
		"time":    {valueShort: "fo", valueLong: longs("--format", "--output")},
		"command": {stopShort: "vV"},
		"builtin": {},
		"exec":    {valueShort: "a"},
		"xargs": {valueShort: "ILnPsdEa", valueLong: longs("--arg-file", "--delimiter", "--max-args",
			"--max-procs", "--max-chars", "--process-slot-var")},
		"stdbuf":    {valueShort: "ioe", valueLong: longs("--input", "--output", "--error")},
		"setsid":    {},
		"ionice":    {valueShort: "cnpPu", valueLong: longs("--class", "--classdata", "--pid", "--pgid", "--uid")},
		"chroot":    {valueLong: longs("--userspec", "--groups"), positionals: 1},
		"nocorrect": {},
		"noglob":    {},
		"busybox":   {},
	}
})

// stripWrappers removes wrapper programs (and their options) from the front of
// words. It returns the remaining words (never empty), the wrappers and the
// NAME=value assignments the wrappers set.
func stripWrappers(words []shellWord) ([]shellWord, []Wrapper, map[string]string) {
	var wrappers []Wrapper
	var env map[string]string
	for iter := 0; iter < 32 && len(words) > 1; iter++ {
		if words[0].dyn && !words[0].resolved {
			break
		}
		name := ProgramName(words[0].text)
		spec, ok := wrapperSpecs()[name]
		if !ok {
			break
		}
		n, assigns, split, stop := spec.consume(words)
		if stop || n >= len(words) && split == nil {
			break
		}
		for k, v := range assigns {
			if env == nil {
				env = map[string]string{}
			}
			env[k] = v
		}
		wrappers = append(wrappers, Wrapper{Program: name, Argv: wordTexts(words[:n])})
		rest := words[n:]
		if split != nil {
			rest = append(split, rest...)
		}
		if len(rest) == 0 {
			// env -S "" or similar: nothing runs; keep the wrapper as the program.
			wrappers = wrappers[:len(wrappers)-1]
			break
		}
		words = rest
	}
	return words, wrappers, env
}

// consume returns how many words the wrapper takes (itself, its options and
// positionals), assignments it makes, and an env -S command line. stop is
// true when the options say the wrapper will not run a command.
func (s wrapperSpec) consume(words []shellWord) (n int, assigns map[string]string, split []shellWord, stop bool) {
	i := 1
	for i < len(words) {
		t := words[i].text
		if words[i].dyn && !words[i].resolved {
			return i, assigns, split, false
		}
		if t == "--" {
			i++
			break
		}
		if s.assignments && isAssignmentWord(t) {
			if assigns == nil {
				assigns = map[string]string{}
			}
			k, v, _ := strings.Cut(t, "=")
			assigns[k] = v
			i++
			continue
		}
		if len(t) < 2 || t[0] != '-' {
			break
		}
		if strings.HasPrefix(t, "--") {
			name, val, hasVal := strings.Cut(t, "=")
			if name == "--split-string" && s.splitShort != "" {
				v := val
				if !hasVal && i+1 < len(words) {
					v = words[i+1].text
					i++
				}
				split = append(split, fallbackWords(v)...)
				i++
				continue
			}
			i++
			if !hasVal && s.valueLong[name] {
				i++
			}
			continue
		}
		// A cluster of short options: -u root, -uroot, -Eu root.
		consumed := 1
		for j := 1; j < len(t); j++ {
			c := t[j]
			if strings.IndexByte(s.stopShort, c) >= 0 {
				return i, assigns, split, true
			}
			if strings.IndexByte(s.valueShort, c) >= 0 {
				val := t[j+1:]
				if val == "" {
					if i+1 < len(words) {
						val = words[i+1].text
					}
					consumed = 2
				}
				if strings.IndexByte(s.splitShort, c) >= 0 {
					split = append(split, fallbackWords(val)...)
				}
				break
			}
		}
		i += consumed
	}
	if i > len(words) {
		i = len(words)
	}
	for k := 0; k < s.positionals && i < len(words); k++ {
		i++
	}
	// Assignments may also follow positionals-free wrappers after options
	// (sudo -u root A=b cmd).
	for s.assignments && i < len(words) && isAssignmentWord(words[i].text) && !(words[i].dyn && !words[i].resolved) {
		if assigns == nil {
			assigns = map[string]string{}
		}
		k, v, _ := strings.Cut(words[i].text, "=")
		assigns[k] = v
		i++
	}
	return i, assigns, split, false
}

func isAssignmentWord(t string) bool {
	eq := strings.IndexByte(t, '=')
	if eq <= 0 {
		return false
	}
	for k := 0; k < eq; k++ {
		c := t[k]
		if !(c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (k > 0 && '0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}

// shellPrograms are the shells whose -c script is parsed in turn.
var shellPrograms = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
		"ash": true, "yash": true, "posh": true, "rbash": true,
	}
})

// shellScriptArg finds the script of "bash [options] -c script [name args]".
func shellScriptArg(words []shellWord) (shellWord, bool) {
	i := scriptIndex(words)
	if i < 0 || i >= len(words) {
		return shellWord{}, false
	}
	return words[i], true
}

// scriptIndex returns the index of the -c script, or -1.
func scriptIndex(words []shellWord) int {
	hasC := false
	for i := 1; i < len(words); i++ {
		t := words[i].text
		switch {
		case t == "--" || t == "-":
			if hasC && i+1 < len(words) {
				return i + 1
			}
			return -1
		case t == "--rcfile" || t == "--init-file" || t == "-o" || t == "+o" || t == "-O" || t == "+O":
			i++
		case strings.HasPrefix(t, "--"):
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			if t[0] == '-' && strings.IndexByte(t[1:], 'c') >= 0 {
				hasC = true
			}
			// -o/-O inside a cluster take the next word.
			if strings.ContainsAny(t[1:], "oO") {
				i++
			}
		default:
			if hasC {
				return i
			}
			return -1
		}
	}
	return -1
}

// shellReadsStdin reports whether a shell invocation reads its script from
// standard input (no script file operand).
func shellReadsStdin(words []shellWord) bool {
	for i := 1; i < len(words); i++ {
		t := words[i].text
		if t == "--rcfile" || t == "--init-file" || t == "-o" || t == "+o" || t == "-O" || t == "+O" {
			i++
			continue
		}
		if len(t) > 1 && (t[0] == '-' || t[0] == '+') {
			if t[0] == '-' && strings.IndexByte(t[1:], 's') >= 0 {
				return true
			}
			continue
		}
		return false
	}
	return true
}

// findExecs returns the commands of find's -exec, -execdir, -ok and -okdir.
func findExecs(words []shellWord) [][]shellWord {
	var out [][]shellWord
	for i := 1; i < len(words); i++ {
		switch words[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(words) && words[j].text != ";" && words[j].text != "+" {
				j++
			}
			if j > i+1 {
				out = append(out, words[i+1:j])
			}
			i = j
		}
	}
	return out
}

// fallback splits a string that does not parse, quote-aware but without
// grammar, into pseudo-commands at ; & | ( ) ` $( and newlines, so rules still
// see the words. Each pseudo-command is then treated like a parsed one
// (wrappers stripped, bash -c scripts parsed). Redirection operators and
// their targets are kept as redirections (see fallbackSplit), so a write
// through > or >> is seen in a line that does not parse too.
func (w *shellWalker) fallback(src string) {
	w.src = src
	saved := w.via
	w.via = "fallback"
	for _, c := range fallbackSplit(src, true) {
		if w.full {
			break
		}
		text := strings.Join(wordTexts(c.words), " ")
		if len(c.words) == 0 {
			w.add(&Command{Redirects: c.redirs, Text: text})
			continue
		}
		w.emit(c.words, nil, c.redirs, text)
	}
	w.via = saved
}

// fallbackWords splits a string into words with shell-like quoting. A < or >
// ends a word but is not a redirection: the string is a value being split
// (env -S), not a command line.
func fallbackWords(s string) []shellWord {
	var out []shellWord
	for _, c := range fallbackSplit(s, false) {
		out = append(out, c.words...)
	}
	return out
}

// fallbackCmd is one pseudo-command of the fallback split.
type fallbackCmd struct {
	words  []shellWord
	redirs []Redirect
}

// fallbackRedirOps are the redirection operators the fallback split knows,
// longest first so that a prefix never shadows a longer operator.
var fallbackRedirOps = []string{"&>>", "<<<", "<<-", "&>", ">>", ">|", ">&", "<<", "<>", "<&", ">", "<"}

// fallbackRedirOp returns the redirection operator at src[i:], or "". A < or
// > followed by ( is a process substitution, not a redirection.
func fallbackRedirOp(src string, i int) string {
	for _, op := range fallbackRedirOps {
		if strings.HasPrefix(src[i:], op) {
			if next := i + len(op); next < len(src) && src[next] == '(' && (op == "<" || op == ">") {
				return ""
			}
			return op
		}
	}
	return ""
}

// fallbackSplit splits src into pseudo-commands. With redirs, a redirection
// operator (an all-digit word written right before it is its descriptor) and
// the word after it become a Redirect of the pseudo-command instead of words;
// an operator without a word before the command ends keeps an empty, dynamic
// target. Without redirs, < and > only end words.
func fallbackSplit(src string, redirs bool) []fallbackCmd {
	var cmds []fallbackCmd
	var cur fallbackCmd
	var word strings.Builder
	inWord := false
	dyn := false
	// pending is the index in cur.redirs of a redirection still waiting for
	// its target, or -1.
	pending := -1
	endWord := func() {
		if inWord {
			if pending >= 0 {
				cur.redirs[pending].Target, cur.redirs[pending].Dynamic = word.String(), dyn
				pending = -1
			} else {
				cur.words = append(cur.words, shellWord{text: word.String(), dyn: dyn})
			}
		}
		word.Reset()
		inWord, dyn = false, false
	}
	endCmd := func() {
		endWord()
		if pending >= 0 {
			cur.redirs[pending].Dynamic = true
			pending = -1
		}
		// Drop leading NAME=value words, as the parser does for env.
		for len(cur.words) > 0 && isAssignmentWord(cur.words[0].text) {
			cur.words = cur.words[1:]
		}
		if len(cur.words) > 0 || len(cur.redirs) > 0 {
			cmds = append(cmds, cur)
		}
		cur = fallbackCmd{}
	}
	redirect := func(op string) {
		fd := ""
		if inWord && !dyn && pending < 0 && word.Len() > 0 && strings.Trim(word.String(), "0123456789") == "" {
			fd = word.String()
			word.Reset()
			inWord = false
		}
		endWord()
		if pending >= 0 {
			cur.redirs[pending].Dynamic = true
		}
		cur.redirs = append(cur.redirs, Redirect{Op: op, FD: fd})
		pending = len(cur.redirs) - 1
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src):
			i++
			if src[i] != '\n' {
				word.WriteByte(src[i])
				inWord = true
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(src[i+1:], '\'')
			if j < 0 {
				word.WriteString(src[i+1:])
				i = len(src)
			} else {
				word.WriteString(src[i+1 : i+1+j])
				i += j + 1
			}
		case c == '"':
			inWord = true
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				if src[j] == '$' {
					dyn = true
				}
				word.WriteByte(src[j])
				j++
			}
			i = j
		case c == '$' && i+1 < len(src) && src[i+1] == '(':
			endCmd()
			i++
		case c == '$':
			dyn = true
			inWord = true
			word.WriteByte(c)
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case redirs && (c == '<' || c == '>' || c == '&') && fallbackRedirOp(src, i) != "":
			op := fallbackRedirOp(src, i)
			redirect(op)
			i += len(op) - 1
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '`' || c == '\n' || c == '{' || c == '}':
			if (c == '{' || c == '}') && inWord {
				word.WriteByte(c)
				continue
			}
			endCmd()
		case c == '<' || c == '>':
			endWord()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds
}

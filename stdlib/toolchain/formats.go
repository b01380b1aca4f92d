package toolchain

import (
	"regexp"
	"strings"
	"sync"
)

// makeAssign is a make variable assignment: [export|override] NAME op value.
var makeAssign = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(?:export|override|private)\s+)*([A-Za-z0-9_.-]+)\s*(:::=|::=|:=|\?=|\+=|!=|=)\s*(.*)$`)
})

// makefile reads make's recipes and the commands make runs while reading
// the file ($(shell ...), != assignments), with the file's own variables
// expanded.
func (a *analysis) makefile(content string) {
	lines := joinContinuations(content)
	vars := map[string]string{}
	var recipes []string
	inDefine := 0
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(line, "\t") && inDefine == 0 {
			recipes = append(recipes, line[1:])
			continue
		}
		if strings.HasPrefix(trimmed, "#") || trimmed == "" {
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "define "), trimmed == "define":
			inDefine++
		case trimmed == "endef":
			if inDefine > 0 {
				inDefine--
			}
		}
		if inDefine > 0 && strings.HasPrefix(line, "\t") {
			// A canned recipe (define ... endef) used in rules.
			recipes = append(recipes, line[1:])
			continue
		}
		first := strings.Fields(trimmed)[0]
		switch first {
		case "load", "-load":
			a.unproven("make loads the object " + short(trimmed))
		case "include", "-include", "sinclude":
			// Included makefiles are files of this family: their writes
			// are judged on their own.
		}
		// A rule with its recipe on the same line (target: prereqs ;
		// recipe): the text after the first ; is a recipe line.
		if makeAssign().FindStringSubmatch(trimmed) == nil {
			if c := strings.Index(trimmed, ":"); c >= 0 {
				if sc := strings.Index(trimmed[c:], ";"); sc >= 0 {
					recipes = append(recipes, trimmed[c+sc+1:])
				}
			}
		}
		if m := makeAssign().FindStringSubmatch(trimmed); m != nil {
			name, op, val := m[1], m[2], m[3]
			switch op {
			case "!=":
				a.command(a.expandMake(val, vars, 0))
			case "+=":
				vars[name] = strings.TrimSpace(vars[name] + " " + val)
			case "?=":
				if _, ok := vars[name]; !ok {
					vars[name] = val
				}
			default:
				vars[name] = val
			}
			if name == "SHELL" || name == ".SHELLFLAGS" {
				sh := strings.Fields(val)
				if name == ".SHELLFLAGS" || len(sh) == 0 || !shellNames[strings.ToLower(pathBase(sh[0]))] {
					a.unproven("make runs the recipes with " + name + " = " + short(val))
				}
			}
			if name == ".RECIPEPREFIX" {
				a.unproven("the file changes make's recipe prefix")
			}
		}
		// make runs $(shell ...) wherever it is expanded, also in rules
		// and conditionals.
		a.makeShellCalls(trimmed, vars)
	}
	for _, r := range recipes {
		r = strings.TrimLeft(r, "@-+ \t")
		if strings.HasPrefix(strings.TrimSpace(r), "#") && !strings.Contains(r, "$(shell") {
			continue
		}
		a.command(a.expandMake(r, vars, 0))
	}
}

// makeShellCalls records the commands of every $(shell ...) in s.
func (a *analysis) makeShellCalls(s string, vars map[string]string) {
	for _, call := range makeCalls(s) {
		fn, arg, _ := strings.Cut(call, " ")
		switch fn {
		case "shell":
			a.command(a.expandMake(arg, vars, 0))
		case "eval", "file", "guile":
			a.unproven("make's $(" + fn + " ...) function makes code from text")
		}
	}
}

// makeCalls returns the bodies of the $(...) and ${...} references in s,
// outermost first, with nested ones after their parent.
func makeCalls(s string) []string {
	var out []string
	for i := 0; i < len(s)-1; i++ {
		if s[i] != '$' {
			continue
		}
		if s[i+1] == '$' {
			i++
			continue
		}
		open := s[i+1]
		if open != '(' && open != '{' {
			continue
		}
		end := matching(s, i+1)
		if end < 0 {
			return out
		}
		body := s[i+2 : end]
		out = append(out, body)
		out = append(out, makeCalls(body)...)
		i = end
	}
	return out
}

// matching returns the index of the bracket closing the one at s[i], or -1.
func matching(s string, i int) int {
	open := s[i]
	closer := byte(')')
	if open == '{' {
		closer = '}'
	}
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case open:
			depth++
		case closer:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// makeAutomatic are make's automatic variables and the built-ins a recipe
// uses, replaced by a word of the same kind.
var makeAutomatic = map[string]string{
	"@": "target", "<": "prerequisite", "^": "prerequisites", "?": "prerequisites", "*": "stem", "+": "prerequisites",
	"|": "prerequisites", "MAKE": "make", "CURDIR": ".", "MAKEFLAGS": "", "MFLAGS": "",
}

// expandMake expands a recipe as make would before handing it to the
// shell: $$ is $, the file's variables and the automatic variables are
// substituted, $(shell ...) is its command's output (kept as a $( )
// substitution, so the shell analysis sees it), and other functions and
// unknown variables become shell variables (dynamic words).
func (a *analysis) expandMake(s string, vars map[string]string, depth int) string {
	if depth > 8 {
		a.unproven("make variables nest too deep")
		return "$MAKE_VARIABLE"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i == len(s)-1 {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '$':
			b.WriteByte('$')
			i++
		case n == '(' || n == '{':
			end := matching(s, i+1)
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			body := s[i+2 : end]
			i = end
			fn, arg, hasArg := strings.Cut(body, " ")
			switch {
			case fn == "shell" && hasArg:
				b.WriteString("$(" + a.expandMake(arg, vars, depth+1) + ")")
			case hasArg || strings.Contains(body, ":"):
				// A function ($(wildcard ...), $(patsubst ...)) or a
				// substitution reference ($(SRC:.c=.o)).
				b.WriteString("$MAKE_FUNCTION")
			default:
				if v, ok := vars[body]; ok {
					b.WriteString(a.expandMake(v, vars, depth+1))
				} else if v, ok := makeAutomatic[strings.TrimRight(body, "DF")]; ok {
					b.WriteString(v)
				} else {
					b.WriteString("$" + sanitizeVar(body))
				}
			}
		default:
			if v, ok := makeAutomatic[string(n)]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$" + sanitizeVar(string(n)))
			}
			i++
		}
	}
	return b.String()
}

func sanitizeVar(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || b.String()[0] >= '0' && b.String()[0] <= '9' {
		return "MAKE_VARIABLE"
	}
	return b.String()
}

// joinContinuations splits content into lines, joining backslash-newline
// continuations.
func joinContinuations(content string) []string {
	content = strings.ReplaceAll(content, "\r\n", "\n")
	raw := strings.Split(content, "\n")
	var out []string
	var cur strings.Builder
	for _, l := range raw {
		if cur.Len() > 0 {
			// make drops the recipe prefix of a continued recipe line.
			l = strings.TrimPrefix(l, "\t")
		}
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(l[:len(l)-1])
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// justAssign is a justfile assignment whose value is a backtick command.
var justBacktick = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`]*)`") })

// justfile reads a justfile: recipe lines are the indented lines after a
// recipe header; backticks run when the file is read.
func (a *analysis) justfile(content string) {
	inRecipe := false
	shebang := false
	for _, line := range joinContinuations(content) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if !indented {
			inRecipe, shebang = false, false
			if strings.HasPrefix(trimmed, "#") {
				continue
			}
			if strings.HasPrefix(trimmed, "set ") && (strings.Contains(trimmed, "shell") || strings.Contains(trimmed, "script-interpreter")) {
				if !regexp.MustCompile(`\[\s*["'](ba)?sh["']`).MatchString(trimmed) {
					a.unproven("the justfile runs recipes with " + short(trimmed))
				}
			}
			for _, m := range justBacktick().FindAllStringSubmatch(trimmed, -1) {
				a.command(m[1])
			}
			if !strings.Contains(trimmed, ":=") && strings.Contains(trimmed, ":") {
				inRecipe = true
			}
			continue
		}
		if !inRecipe {
			continue
		}
		if strings.HasPrefix(trimmed, "#!") {
			shebang = true
			if !shellShebang(trimmed) {
				a.unproven("a recipe runs as " + short(trimmed))
			}
			continue
		}
		if strings.HasPrefix(trimmed, "#") && !shebang {
			continue
		}
		trimmed = strings.TrimLeft(trimmed, "@-")
		a.command(justInterp().ReplaceAllString(trimmed, "$$JUST_VALUE"))
	}
}

var justInterp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{[^{}]*\}\}`) })

func shellShebang(line string) bool {
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(f) == 0 {
		return false
	}
	prog := pathBase(f[0])
	if prog == "env" && len(f) > 1 {
		prog = f[1]
		if prog == "-S" && len(f) > 2 {
			prog = f[2]
		}
	}
	return shellNames[prog]
}

// script reads a file that is a shell script (a git hook, .envrc); a
// shebang naming another interpreter makes it code of that language.
func (a *analysis) script(content string) {
	first, _, _ := strings.Cut(content, "\n")
	if strings.HasPrefix(first, "#!") && !shellShebang(first) {
		f := strings.Fields(strings.TrimPrefix(first, "#!"))
		prog := ""
		if len(f) > 0 {
			prog = pathBase(f[0])
			if prog == "env" && len(f) > 1 {
				prog = f[len(f)-1]
			}
		}
		switch {
		case strings.HasPrefix(prog, "python"):
			a.code("python", content)
		case prog == "node":
			a.code("javascript", content)
		case prog == "ruby":
			a.code("ruby", content)
		default:
			a.unproven("the script runs with " + short(first))
		}
		return
	}
	a.command(content)
}

// goGenerate reads the //go:generate lines of Go source, with go
// generate's own variables replaced and -command aliases resolved.
func (a *analysis) goGenerate(content string) {
	aliases := map[string]string{}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if !strings.HasPrefix(line, "//go:generate") {
			continue
		}
		rest := strings.TrimSpace(strings.TrimPrefix(line, "//go:generate"))
		rest = goGenVars().ReplaceAllString(rest, "$1")
		rest = strings.ReplaceAll(rest, "$DOLLAR", "$")
		f := strings.Fields(rest)
		if len(f) >= 3 && f[0] == "-command" {
			aliases[f[1]] = strings.Join(f[2:], " ")
			a.command(strings.Join(f[2:], " "))
			continue
		}
		if len(f) > 0 {
			if al, ok := aliases[f[0]]; ok {
				rest = al + " " + strings.Join(f[1:], " ")
			}
		}
		a.command(rest)
	}
}

var goGenVars = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{?(GOARCH|GOOS|GOFILE|GOLINE|GOPACKAGE|GOROOT|GOROOT_FINAL)\}?`)
})

// markdown reads an agent's instruction file: fenced code blocks marked as
// shell, console lines with a prompt, Claude Code's !`command` lines,
// and inline code that pipes, chains or names a program that fetches or
// runs code.
func (a *analysis) markdown(content string) {
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	inFence, fence, lang := false, "", ""
	var block []string
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if !inFence {
			if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				inFence, fence = true, t[:3]
				lang = strings.ToLower(strings.Fields(strings.Trim(t[3:], "`~ {}.") + " x")[0])
				block = nil
				continue
			}
			for _, m := range claudeBang().FindAllStringSubmatch(line, -1) {
				a.command(m[1])
			}
			for _, m := range inlineCode().FindAllStringSubmatch(line, -1) {
				if riskyInline().MatchString(m[1]) {
					a.command(m[1])
				}
			}
			continue
		}
		if strings.HasPrefix(t, fence) {
			inFence = false
			switch lang {
			case "sh", "bash", "shell", "zsh", "shell-session", "console", "terminal", "shellscript":
				for _, l := range block {
					lt := strings.TrimSpace(l)
					switch {
					case strings.HasPrefix(lt, "$ "):
						a.command(lt[2:])
					case lang == "console" || lang == "shell-session" || lang == "terminal":
						// Output lines of a session transcript.
					case strings.HasPrefix(lt, "#"):
					default:
						a.command(lt)
					}
				}
			case "python", "py", "javascript", "js", "ruby", "powershell", "ps1", "pwsh":
				a.code(lang, strings.Join(block, "\n"))
			}
			continue
		}
		block = append(block, line)
	}
}

var (
	claudeBang  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("!`([^`]+)`") })
	inlineCode  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`\n]+)`") })
	riskyInline = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[|;]|&&|\$\(|>|^\s*(curl|wget|bash|sh|zsh|nc|ncat|socat|ssh|scp|rsync|python3?|node|perl|ruby|eval|sudo|chmod|rm|base64|powershell|iex|iwr|gh|git\s+push|git\s+config|npm\s+publish|docker|kubectl|aws|gcloud|az)\s`)
	})
)

// decodeINI reads key = value lines under [section] and [section "sub"]
// headers (git config, .npmrc, tox.ini, .properties) into a map of
// sections ("" for keys before any header) with lower-case keys;
// indented lines continue the previous value (tox's multi-line commands,
// each line a command).
func decodeINI(content string) map[string]any {
	out := map[string]any{}
	section := map[string]any{}
	out[""] = section
	var lastKey string
	for _, line := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if t[0] == '[' && strings.HasSuffix(t, "]") {
			name := strings.TrimSpace(t[1 : len(t)-1])
			if head, sub, ok := strings.Cut(name, " "); ok {
				name = strings.ToLower(head) + "." + strings.Trim(strings.TrimSpace(sub), `"`)
			} else {
				name = strings.ToLower(name)
			}
			// [testenv:py] is tox's spelling of a sub-section.
			name = strings.ReplaceAll(name, ":", ".")
			s, ok := out[name].(map[string]any)
			if !ok {
				s = map[string]any{}
				out[name] = s
			}
			section, lastKey = s, ""
			continue
		}
		if _, isList := section[lastKey].([]any); isList && (line[0] == ' ' || line[0] == '\t') && lastKey != "" {
			// tox's multi-line value: "commands =" then one command a line.
			section[lastKey] = append(toList(section[lastKey]), t)
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			k, v, ok = strings.Cut(t, ":")
		}
		if !ok {
			continue
		}
		lastKey = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		if v == "" {
			section[lastKey] = []any{}
		} else {
			section[lastKey] = v
		}
	}
	// Sections nest by their dotted names (filter.lfs), so key paths
	// reach them as they reach TOML tables.
	nested := map[string]any{}
	for name, s := range out {
		if name == "" {
			for k, v := range s.(map[string]any) {
				nested[k] = v
			}
			continue
		}
		cur := nested
		parts := strings.SplitN(name, ".", 2)
		for i, p := range parts {
			if i == len(parts)-1 {
				m, ok := cur[p].(map[string]any)
				if !ok {
					m = map[string]any{}
					cur[p] = m
				}
				for k, v := range s.(map[string]any) {
					m[k] = v
				}
				break
			}
			m, ok := cur[p].(map[string]any)
			if !ok {
				m = map[string]any{}
				cur[p] = m
			}
			cur = m
		}
	}
	return nested
}

func toList(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case string:
		return []any{x}
	}
	return nil
}

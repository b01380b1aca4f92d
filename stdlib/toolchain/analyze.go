package toolchain

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
	"go.yaml.in/yaml/v3"
)

// Bounds of an analysis: a content past MaxContent, or one that yields
// more than MaxCommands commands, is unproven rather than read in part.
const (
	MaxContent  = 1 << 20
	MaxCommands = 512
)

// Analysis is what a file's content will run.
type Analysis struct {
	// Runs is true when a toolchain runs or loads the file (it has a
	// Family); every other field is then filled in.
	Runs bool
	// Family, Ecosystem and RunBy come from the file's Family.
	Family, Ecosystem, RunBy string
	// Commands are the shell commands the content holds, in file order, to
	// be judged as direct commands are.
	Commands []string
	// Uses are references to code fetched from elsewhere and run (a GitHub
	// action, a pre-commit hook repository, a devcontainer feature, a
	// container image), as written.
	Uses []string
	// Unproven says, once per cause, why the content cannot be proven safe
	// by reading its commands: program code that names a capability, a
	// content that does not parse, a setting that runs a program the file
	// does not show.
	Unproven []string
}

// Analyze reads content as the file at p and returns what it will run. A
// path no toolchain runs gives an Analysis with Runs false.
func Analyze(p, content string) Analysis {
	f, ok := Lookup(p)
	if !ok {
		return Analysis{}
	}
	a := &analysis{Analysis: Analysis{Runs: true, Family: f.Name, Ecosystem: f.Ecosystem, RunBy: f.RunBy}}
	if len(content) > MaxContent {
		a.unproven(fmt.Sprintf("the content is larger than %d bytes", MaxContent))
		return a.done()
	}
	switch f.Format {
	case FormatMake:
		a.makefile(content)
	case FormatJust:
		a.justfile(content)
	case FormatShell:
		a.script(content)
	case FormatJSON:
		v, err := decodeJSON(content)
		a.tree(f, v, err)
	case FormatTOML:
		var v map[string]any
		_, err := toml.Decode(content, &v)
		a.tree(f, v, err)
	case FormatYAML:
		var v any
		err := yaml.Unmarshal([]byte(content), &v)
		a.tree(f, v, err)
	case FormatINI:
		a.tree(f, decodeINI(content), nil)
	case FormatGo:
		a.goGenerate(content)
	case FormatMarkdown:
		a.markdown(content)
	case FormatCode:
		a.code(f.Lang, content)
	}
	return a.done()
}

// AnalyzeEdit reads fragment as a part of the file at p: an edit's new
// text or a patch's added lines. A fragment of a structured file (a line of
// package.json) seldom parses on its own; when it does not, it is read as
// text instead, and only a fragment that names a risky program (a pipe, a
// download, a shell -c, an encoded payload) is unproven.
func AnalyzeEdit(p, fragment string) Analysis {
	a := Analyze(p, fragment)
	if !a.Runs {
		return a
	}
	kept := a.Unproven[:0:0]
	parseFailed := false
	for _, r := range a.Unproven {
		if strings.HasPrefix(r, notParse) {
			parseFailed = true
			continue
		}
		kept = append(kept, r)
	}
	if parseFailed {
		if m := riskyFragment().FindString(fragment); m != "" {
			kept = append(kept, "an edit that does not parse on its own names "+short(m))
		}
	}
	a.Unproven = kept
	return a
}

// notParse starts the reason of a content that does not parse.
const notParse = "the file does not parse: "

// riskyFragment is what an unparsed edit may not name: a shell, a
// download or network program, an encoded payload, a pipe into one.
var riskyFragment = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(curl|wget|nc|ncat|socat|bash|sh|zsh|python3?\s+-c|node\s+-e|perl\s+-e|ruby\s+-e|eval|base64|powershell|iex|iwr|ssh|scp|rsync|ftp|telnet)\b|\|\s*\w|\$\(|` + "`" + `|>\s*/|&&|;`)
})

// analysis accumulates an Analysis.
type analysis struct {
	Analysis
	seen map[string]bool
}

func (a *analysis) command(c string) {
	c = strings.TrimSpace(c)
	if c == "" {
		return
	}
	if len(a.Commands) >= MaxCommands {
		a.unproven(fmt.Sprintf("more than %d commands", MaxCommands))
		return
	}
	a.Commands = append(a.Commands, c)
}

func (a *analysis) use(u string) {
	if u = strings.TrimSpace(u); u != "" {
		a.Uses = append(a.Uses, u)
	}
}

func (a *analysis) unproven(reason string) {
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if !a.seen[reason] {
		a.seen[reason] = true
		a.Unproven = append(a.Unproven, reason)
	}
}

func (a *analysis) done() Analysis {
	out := a.Analysis
	if out.Commands == nil {
		out.Commands = []string{}
	}
	if out.Uses == nil {
		out.Uses = []string{}
	}
	if out.Unproven == nil {
		out.Unproven = []string{}
	}
	return out
}

// decodeJSON reads JSON, also with comments and trailing commas (JSONC, as
// devcontainer.json and VS Code's files are written).
func decodeJSON(s string) (any, error) {
	b, err := hujson.Standardize([]byte(s))
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// tree collects the commands under the family's keys of a decoded
// document.
func (a *analysis) tree(f Family, v any, err error) {
	if err != nil {
		a.unproven(notParse + firstLine(err.Error()))
		return
	}
	for _, spec := range f.Keys {
		keyPath, mode, _ := strings.Cut(spec, ":")
		if mode == "" {
			mode = "cmd"
		}
		walk(v, strings.Split(keyPath, "."), nil, func(val, parent any) { a.value(mode, val, parent) })
	}
}

// walk calls fn with every value (and the map holding it) that the key path
// reaches from v.
func walk(v any, keys []string, parent any, fn func(val, parent any)) {
	if len(keys) == 0 {
		fn(v, parent)
		return
	}
	k := keys[0]
	if k == "**" {
		walk(v, keys[1:], parent, fn)
		for _, c := range children(v) {
			walk(c, keys, v, fn)
		}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if k == "*" {
			for _, name := range sortedKeys(x) {
				walk(x[name], keys[1:], x, fn)
			}
			return
		}
		for name, c := range x {
			if strings.EqualFold(name, k) {
				walk(c, keys[1:], x, fn)
			}
		}
	case []any:
		if k == "*" {
			for _, c := range x {
				walk(c, keys[1:], x, fn)
			}
		}
	}
}

func children(v any) []any {
	switch x := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(x))
		for _, k := range sortedKeys(x) {
			out = append(out, x[k])
		}
		return out
	case []any:
		return x
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// value reads one value reached by a key in its mode.
func (a *analysis) value(mode string, v, parent any) {
	switch mode {
	case "cmd":
		a.commands(v, 0)
	case "argv":
		switch x := v.(type) {
		case string:
			a.command(x)
		case []any:
			a.command(joinArgv(x))
		default:
			a.commands(v, 0)
		}
	case "cmdargs":
		s, ok := v.(string)
		if !ok {
			a.value("argv", v, parent)
			return
		}
		if m, ok := parent.(map[string]any); ok {
			if args, ok := m["args"].([]any); ok {
				a.command(quote(s) + " " + joinArgv(args))
				return
			}
		}
		a.command(s)
	case "cargo":
		switch x := v.(type) {
		case string:
			a.command("cargo " + x)
		case []any:
			a.command("cargo " + joinArgv(x))
		}
	case "composer":
		a.composer(v)
	case "uses":
		for _, s := range strs(v) {
			a.use(s)
		}
	case "ukeys":
		if m, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				a.use(k)
			}
		}
	case "code":
		if present(v) {
			a.unproven("it names code to load: " + short(fmt.Sprint(v)))
		}
	case "flag":
		if present(v) {
			a.unproven("it sets a setting that runs or loads a program: " + short(fmt.Sprint(v)))
		}
	case "bang":
		for _, s := range strs(v) {
			if strings.HasPrefix(strings.TrimSpace(s), "!") {
				a.command(strings.TrimPrefix(strings.TrimSpace(s), "!"))
			}
		}
	case "url":
		for _, s := range strs(v) {
			if l := strings.ToLower(strings.TrimSpace(s)); strings.HasPrefix(l, "ext::") || strings.HasPrefix(l, "fd::") {
				a.unproven("a submodule URL runs a command: " + short(s))
			}
		}
	case "env":
		if m, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if codeEnv().MatchString(k) {
					a.unproven("it sets " + k + ", which makes programs load other code")
				}
			}
		}
	case "shell":
		if s, ok := v.(string); ok {
			sh := strings.Fields(strings.TrimSpace(s))
			if len(sh) > 0 && !shellNames[strings.ToLower(pathBase(sh[0]))] {
				a.unproven("a step runs its script with " + short(s) + ", not a POSIX shell")
			}
		}
	case "backend":
		if s, ok := v.(string); ok && !knownBackends[strings.TrimSpace(s)] {
			a.unproven("the build backend " + short(s) + " is not a known one")
		}
	case "build":
		switch x := v.(type) {
		case string:
			if x != "build.rs" {
				a.unproven("cargo runs the build script " + short(x))
			}
		case bool:
		default:
			a.unproven("cargo runs the build scripts " + short(fmt.Sprint(x)))
		}
	case "dist":
		if s, ok := v.(string); ok && !trustedDist().MatchString(strings.ReplaceAll(s, `\:`, ":")) {
			a.unproven("the wrapper downloads and runs " + short(s))
		}
	case "entry":
		a.preCommitEntry(v, parent)
	case "prompt":
		if s, ok := v.(string); ok {
			for _, m := range geminiShell().FindAllStringSubmatch(s, -1) {
				a.command(m[1])
			}
		}
	}
}

// commands reads a value of cmd mode: a string is a command, a list holds
// commands (each element, recursively).
func (a *analysis) commands(v any, depth int) {
	if depth > 16 {
		a.unproven("the commands are nested too deep")
		return
	}
	switch x := v.(type) {
	case string:
		a.command(x)
	case []any:
		for _, c := range x {
			a.commands(c, depth+1)
		}
	}
	// A map ({cmd: ...}, {run: ...}) is read through the family's own
	// keys for it, so its descriptions and options are not commands.
}

// composer reads a composer script: a command, an @ reference to another
// script or to php/composer, or a PHP callable.
func (a *analysis) composer(v any) {
	for _, s := range strs(v) {
		s = strings.TrimSpace(s)
		switch {
		case strings.HasPrefix(s, "@php "), strings.HasPrefix(s, "@composer "):
			a.command(s[1:])
		case strings.HasPrefix(s, "@putenv "):
		case strings.HasPrefix(s, "@"):
			// Another script of the same file.
		case !strings.ContainsAny(s, " \t") && strings.Contains(s, "::"):
			a.unproven("a script calls the PHP method " + short(s))
		default:
			a.command(s)
		}
	}
}

// preCommitEntry reads a pre-commit hook's entry: a command for the
// system, script and language hooks, a regular expression for pygrep and
// fail hooks.
func (a *analysis) preCommitEntry(v, parent any) {
	s, ok := v.(string)
	if !ok {
		return
	}
	lang := ""
	if m, ok := parent.(map[string]any); ok {
		lang, _ = m["language"].(string)
	}
	switch lang {
	case "pygrep", "fail":
		return
	case "docker", "docker_image":
		a.use(s)
		return
	}
	if m, ok := parent.(map[string]any); ok {
		if args, ok := m["args"].([]any); ok {
			s += " " + joinArgv(args)
		}
	}
	a.command(s)
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, strs(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, k := range sortedKeys(x) {
			out = append(out, strs(x[k])...)
		}
		return out
	}
	return nil
}

func present(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(x) != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case bool:
		return x
	}
	return true
}

// joinArgv joins a word list into a shell command that has those words.
func joinArgv(words []any) string {
	parts := make([]string, 0, len(words))
	for _, w := range words {
		parts = append(parts, quote(fmt.Sprint(w)))
	}
	return strings.Join(parts, " ")
}

// quote quotes a word for the shell when it needs it.
func quote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func pathBase(s string) string {
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		return s[i+1:]
	}
	return s
}

func short(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return short(s)
}

var (
	shellNames = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true, "ksh": true, "{0}": true}
	// codeEnv are environment variables that make a program load other
	// code or run another program.
	codeEnv = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|DYLD_.*|NODE_OPTIONS|NODE_PATH|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|BASH_ENV|ENV|PROMPT_COMMAND|GIT_.*|RUSTC_WRAPPER|RUSTC|RUSTDOC|RUSTFLAGS|CARGO_.*|GOFLAGS|CC|CXX|LD|PATH|SHELL|EDITOR|VISUAL|PAGER)$`)
	})
	// knownBackends are the build backends of the Python packaging tools
	// (PyPA's list and the common ones).
	knownBackends = map[string]bool{
		"setuptools.build_meta": true, "setuptools.build_meta:__legacy__": true, "hatchling.build": true, "poetry.core.masonry.api": true,
		"poetry.masonry.api": true, "flit_core.buildapi": true, "pdm.backend": true, "pdm.pep517.api": true, "maturin": true,
		"scikit_build_core.build": true, "mesonpy": true, "uv_build": true, "sipbuild.api": true, "enscons.api": true, "whey": true,
	}
	trustedDist = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^https://(services\.gradle\.org/distributions/|repo\.maven\.apache\.org/maven2/|repo1\.maven\.org/maven2/)[^\s]*$`)
	})
	geminiShell = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`!\{([^{}]*)\}`) })
)

package shell

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// Per-program option models (issue 15, point 2): a program that is safe to
// run with some options runs code, or works on other places than its words
// show, with others (make --eval, rg --pre, git -c, go vet -vettool, sort
// --compress-program). Hazard names the first such option of a command;
// Dirs names the directories a command works in besides the current one.
// Options are read as the programs read them: --opt=value and --opt value,
// clustered short options (-uo), and GNU long-option abbreviations (--ev
// for --eval: any prefix of at least three characters after the dashes
// counts, an ambiguous one, which the program refuses, included).

// optionModel lists the options of a program (or of one of its
// subcommands) that run code or act elsewhere.
type optionModel struct {
	// long are GNU long options ("--pre"); their abbreviations count.
	long []string
	// short are single-letter options ("-c"), found in clusters too.
	short []string
	// exact are single-dash words ("-exec", "-toolexec") matched whole,
	// with "=value", or with two dashes.
	exact []string
	// subs are the models of subcommands, keyed by the first positional.
	subs map[string]optionModel
	// badSubs are subcommands that themselves run code or act elsewhere.
	badSubs []string
	// globalFirst says the program's own options (long, short, exact)
	// come before its subcommand, whose options may reuse their letters
	// (git -c x status; git switch -c is switch's own -c).
	globalFirst bool
}

var optionModels = sync.OnceValue(func() map[string]optionModel {
	m := map[string]optionModel{
		"rg":    {long: []string{"--pre", "--hostname-bin"}},
		"sort":  {long: []string{"--compress-program"}},
		"tree":  {short: []string{"-o"}},
		"date":  {long: []string{"--set"}, short: []string{"-s"}},
		"tar":   {long: []string{"--checkpoint-action", "--to-command", "--use-compress-program", "--rsh-command", "--info-script", "--new-volume-script", "--rmt-command"}, short: []string{"-I", "-F"}},
		"zip":   {exact: []string{"-TT", "--unzip-command"}},
		"cargo": {long: []string{"--config"}, short: []string{"-Z"}, badSubs: []string{"install"}},
		"docker": {subs: map[string]optionModel{
			"build": {long: []string{"--output"}, short: []string{"-o"}},
		}},
		// npm: a script shell, another registry or configuration file (which
		// can set script-shell, a registry, node options), node options
		// (--require code), a global install (docs.npmjs.com, "config").
		"npm": {long: []string{"--script-shell", "--global", "--registry", "--userconfig", "--globalconfig", "--node-options"}, short: []string{"-g"},
			badSubs: []string{"exec", "x", "config", "set", "link", "ln", "explore", "edit", "publish"}},
		// npx: -c/--call runs a shell command; -p/--package installs a package
		// to run; --yes installs a missing one without asking (npm-exec docs).
		"npx":  {long: []string{"--call", "--package", "--yes", "--registry", "--node-options", "--userconfig"}, short: []string{"-c", "-p", "-y"}},
		"pnpm": {long: []string{"--global", "--registry", "--config", "--node-options"}, short: []string{"-g"}, badSubs: []string{"dlx", "exec", "config"}},
		"yarn": {long: []string{"--global", "--registry", "--use-yarnrc"}, badSubs: []string{"dlx", "global", "config", "exec"}},
		"pip": {long: []string{"--index-url", "--extra-index-url", "--user", "--target", "--prefix", "--root", "--trusted-host",
			"--find-links", "--src", "--config-settings"}, short: []string{"-i", "-t", "-f"}},
		// uv: --with installs more packages for the run; another index or
		// find-links fetches code from elsewhere (docs.astral.sh/uv, "uv run").
		"uv": {long: []string{"--with", "--with-editable", "--with-requirements", "--index", "--index-url", "--default-index",
			"--extra-index-url", "--find-links", "--config-file"}, short: []string{"-f"}, badSubs: []string{"tool"}},
		"go": {exact: []string{"-toolexec", "-exec", "-vettool", "-overlay", "-modfile"}, subs: map[string]optionModel{
			"env": {short: []string{"-w", "-u"}},
		}},
		"git": {long: []string{"--config-env", "--exec-path", "--git-dir", "--work-tree"}, short: []string{"-c"}, globalFirst: true,
			badSubs: []string{"filter-branch", "daemon", "instaweb", "credential", "send-email", "shell", "upload-pack", "receive-pack", "difftool", "mergetool", "p4", "svn", "cvsimport", "archimport", "remote-ext", "credential-store", "credential-cache", "fsmonitor--daemon"},
			subs: map[string]optionModel{
				"diff":      {long: []string{"--ext-diff", "--textconv"}},
				"log":       {long: []string{"--ext-diff", "--textconv"}},
				"show":      {long: []string{"--ext-diff", "--textconv"}},
				"grep":      {long: []string{"--open-files-in-pager"}, short: []string{"-O"}},
				"fetch":     {long: []string{"--upload-pack"}},
				"pull":      {long: []string{"--upload-pack"}},
				"clone":     {long: []string{"--upload-pack", "--config", "--template"}, short: []string{"-u", "-c"}},
				"ls-remote": {long: []string{"--upload-pack"}},
				"push":      {long: []string{"--receive-pack", "--exec"}},
				"archive":   {long: []string{"--exec", "--remote"}},
				"rebase":    {long: []string{"--exec"}, short: []string{"-x"}},
				"submodule": {badSubs: []string{"foreach"}},
				"bisect":    {badSubs: []string{"run"}},
				"worktree":  {},
				"config":    {},
			}},
	}
	// pip3, gawk and the like read their options as their namesakes.
	m["pip3"] = m["pip"]
	m["uvx"] = m["uv"]
	return m
})

// Hazard returns the first word of the command that makes it run code or
// act on places its words do not show, beyond what its program is trusted
// to do, or "" when there is none: an option outside the program's model
// (rg --pre, make --ev=..., go vet -vettool=..., git -c, npm
// --script-shell), a Makefile read from stdin or a variable assignment
// that runs a command (make 'X:=$(shell id)'), an awk program that runs
// commands, a sed script that does, an interpreter given inline code or
// its stdin (python -c, node -e, bash -s), or a subcommand that runs
// arbitrary programs (git submodule foreach, npm exec). A program with no
// model has no hazard of its own: whether it is safe at all is the
// policy's list.
func (c *Command) Hazard() string {
	args := c.Args()
	switch c.Program {
	case "make", "gmake":
		return makeHazard(args)
	case "awk", "gawk", "mawk", "nawk":
		return awkHazard(args)
	case "sed", "gsed":
		return sedHazard(args)
	case "perl":
		return perlHazard(args)
	case "python", "python3", "node", "nodejs", "ruby", "php", "bash", "sh", "zsh", "dash", "ksh", "deno", "bun":
		return interpreterHazard(c.Program, args)
	case "git":
		if h := gitConfigHazard(c); h != "" {
			return h
		}
	case "go":
		if h := goRunRemote(c); h != "" {
			return h
		}
	case "curl":
		return fetchHazard(args, writeSpecs()["curl"], curlSends())
	case "wget":
		return fetchHazard(args, writeSpecs()["wget"], wgetSends())
	}
	m, ok := optionModels()[c.Program]
	if !ok {
		return ""
	}
	if h := m.hazard(args, c.Positionals()); h != "" {
		return h
	}
	switch c.Program {
	case "pip", "pip3", "uv":
		return pipSource(c.Positionals())
	}
	return ""
}

func (m optionModel) hazard(args, positionals []string) string {
	own := args
	if len(positionals) > 0 && m.globalFirst {
		for i, a := range args {
			if a == positionals[0] {
				own = args[:i]
				break
			}
		}
	}
	if h := findOption(own, m); h != "" {
		return h
	}
	if len(positionals) == 0 {
		return ""
	}
	sub := positionals[0]
	for _, b := range m.badSubs {
		if sub == b {
			return sub
		}
	}
	if s, ok := m.subs[sub]; ok {
		return s.hazard(args, positionals[1:])
	}
	return ""
}

// findOption returns the first word of args (before "--") that is one of
// the model's options.
func findOption(args []string, m optionModel) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name := a
		if i := strings.IndexByte(a, '='); i > 0 {
			name = a[:i]
		}
		for _, e := range m.exact {
			if name == e || name == "-"+e {
				return a
			}
		}
		if strings.HasPrefix(name, "--") {
			for _, l := range m.long {
				if name == l || len(name) >= 5 && strings.HasPrefix(l, name) {
					return a
				}
			}
			continue
		}
		// A cluster of short options: -uo, -Cdir (a letter after one that
		// takes a value is part of the value, which can only make this
		// see more).
		for _, s := range m.short {
			if strings.Contains(name[1:], s[1:]) {
				return a
			}
		}
	}
	return ""
}

var (
	// makeVarHazard is a make assignment that runs a command or changes
	// the shell recipes run with.
	makeVarName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(SHELL|MAKESHELL|\.SHELLFLAGS|MAKEFLAGS|MFLAGS|GNUMAKEFLAGS|MAKEFILES|\.DEFAULT_GOAL|MAKE)\s*[:+?!]*=`)
	})
	makeVarValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("[$`;|&<>()\\s]") })
)

func makeHazard(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a, "=")
			if len(name) >= 3 && strings.HasPrefix("--eval", name) {
				return a
			}
			for _, l := range []string{"--file", "--makefile"} {
				if len(name) >= 4 && strings.HasPrefix(l, name) {
					if !hasValue && i+1 < len(args) {
						value = args[i+1]
					}
					if value == "-" || strings.HasPrefix(value, "/dev/") {
						return a
					}
				}
			}
			continue
		}
		if len(a) > 1 && a[0] == '-' {
			if strings.Contains(a[1:], "E") {
				return a
			}
			if j := strings.IndexByte(a, 'f'); j > 0 {
				v := a[j+1:]
				if v == "" && i+1 < len(args) {
					v = args[i+1]
				}
				if v == "-" || strings.HasPrefix(v, "/dev/") {
					return a
				}
			}
			continue
		}
		if strings.Contains(a, "=") && (makeVarName().MatchString(a) || makeVarValue().MatchString(a[strings.IndexByte(a, '=')+1:])) {
			return a
		}
	}
	return ""
}

// awkRuns matches what lets an awk program run a command or write a file:
// system(), a pipe, getline from a command, output redirection.
var awkRuns = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`system|\||getline|>|close|fflush|ENVIRON|@load|@include`)
})

func awkHazard(args []string) string {
	prog := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) && prog == "" {
				prog = args[i+1]
			}
			i = len(args)
		case a == "-f" || strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "--file") || strings.HasPrefix(a, "--exec") ||
			strings.HasPrefix(a, "-E") || strings.HasPrefix(a, "--load") || a == "-l" || strings.HasPrefix(a, "--include") || a == "-i":
			return a
		case a == "-v" || a == "-F":
			i++
		case len(a) > 1 && a[0] == '-':
		case prog == "":
			prog = a
		}
	}
	if awkRuns().MatchString(prog) {
		return prog
	}
	return ""
}

// sedSafe matches the sed scripts that only edit text: substitutions with
// the usual delimiters and flags (no e, w or r), line deletions and prints.
var sedSafe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(((\d+|\$)(,(\d+|\$))?|/[^/]*/)?\s*(s/([^/\\]|\\.)*/([^/\\]|\\.)*/[gpiIm0-9]*|s\|([^|\\]|\\.)*\|([^|\\]|\\.)*\|[gpiIm0-9]*|s#([^#\\]|\\.)*#([^#\\]|\\.)*#[gpiIm0-9]*|[dpq=]|y/[^/]*/[^/]*/)\s*;?\s*)+$`)
})

func sedHazard(args []string) string {
	var scripts []string
	script := true // the first operand is the script unless -e or -f gave one
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "-e" || a == "--expression":
			script = false
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--expression="):
			script = false
			scripts = append(scripts, a[len("--expression="):])
		case strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "--file") || strings.HasPrefix(a, "--fi"):
			return a
		case len(a) > 1 && a[0] == '-':
		case script:
			scripts = append(scripts, a)
			script = false
		}
	}
	for _, s := range scripts {
		if !sedSafe().MatchString(s) {
			return s
		}
	}
	return ""
}

// pipSource: a requirement fetched from a place other than the package
// index (pip install git+https://..., a URL, a local archive or
// directory outside the project, NAME @ URL): pip builds and runs its
// setup code (pip's "VCS support" and "direct references").
func pipSource(positionals []string) string {
	for i, p := range positionals {
		if i == 0 {
			continue // install, sync, pip, run, ...
		}
		l := strings.ToLower(p)
		for _, pre := range []string{"git+", "hg+", "svn+", "bzr+", "http://", "https://", "file:", "ftp://"} {
			if strings.HasPrefix(l, pre) {
				return p
			}
		}
		if strings.Contains(l, " @ ") || strings.Contains(l, "@git+") || strings.Contains(l, "@http") ||
			strings.HasPrefix(l, "/") || strings.HasPrefix(l, "~") || strings.HasPrefix(l, "../") {
			return p
		}
	}
	return ""
}

// perlHazard: perl run on a script file, or with -e code that only edits
// text as sed does (perl -pi -e 's/old/new/g' f): substitutions and
// transliterations whose patterns hold no code ((?{ }), (??{ })), whose
// replacements interpolate nothing but match groups ($1, ${2}, $&), and
// whose flags run nothing (no e, no r). Any option but -p, -n, -a, -w,
// -l, -0 and -i[EXT] (which read and write the operands in place) is a
// hazard, as is any other code.
func perlHazard(args []string) string {
	var codes []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
	cluster:
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'p', 'n', 'a', 'w':
			case 'l', '0':
				for j+1 < len(a) && a[j+1] >= '0' && a[j+1] <= '9' {
					j++
				}
			case 'i':
				break cluster // the rest is the backup suffix
			case 'e', 'E':
				if j+1 < len(a) {
					codes = append(codes, a[j+1:])
				} else if i+1 < len(args) {
					codes = append(codes, args[i+1])
					i++
				} else {
					return a
				}
				break cluster
			default:
				return a
			}
		}
	}
	if len(codes) == 0 {
		return interpreterHazard("perl", args)
	}
	for _, c := range codes {
		if !perlEditOnly(c) {
			return c
		}
	}
	return ""
}

// perlWrites: the files perl -i edits in place (and their backups, FILE
// followed by the -i suffix), for perl run with -e code that only edits
// text (perlHazard); ok is false for any other perl command, whose words
// may all name files.
func perlWrites(args []string) (files []string, ok bool) {
	if perlHazard(args) != "" {
		return nil, false
	}
	inPlace, suffix, code := false, "", false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
	cluster:
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'i':
				inPlace, suffix = true, a[j+1:]
				break cluster
			case 'e', 'E':
				code = true
				if j+1 == len(a) {
					i++
				}
				break cluster
			}
		}
	}
	if !code {
		return nil, false // a script file: it may write anything
	}
	if !inPlace {
		return []string{}, true
	}
	for _, f := range args[i:] {
		files = append(files, f)
		switch {
		case suffix == "":
		case strings.Contains(suffix, "*"):
			files = append(files, strings.ReplaceAll(suffix, "*", path.Base(f)))
		default:
			files = append(files, f+suffix)
		}
	}
	return files, true
}

// perlEditOnly reports whether perl code is only s/// and tr/// (y///)
// statements that run nothing (see perlHazard).
func perlEditOnly(code string) bool {
	rest := strings.TrimSpace(code)
	if rest == "" {
		return false
	}
	for rest != "" {
		var op string
		switch {
		case strings.HasPrefix(rest, "s"):
			op, rest = "s", rest[1:]
		case strings.HasPrefix(rest, "tr"):
			op, rest = "tr", rest[2:]
		case strings.HasPrefix(rest, "y"):
			op, rest = "tr", rest[1:]
		default:
			return false
		}
		if rest == "" || !strings.ContainsRune("/|#!,:", rune(rest[0])) {
			return false
		}
		d := rest[0]
		var parts [2]string
		rest = rest[1:]
		for k := range parts {
			end := -1
			for x := 0; x < len(rest); x++ {
				if rest[x] == '\\' {
					x++
					continue
				}
				if rest[x] == d {
					end = x
					break
				}
			}
			if end < 0 {
				return false
			}
			parts[k], rest = rest[:end], rest[end+1:]
		}
		flags := len(rest) - len(strings.TrimLeft(rest, "gimsxncdr"))
		f := rest[:flags]
		rest = strings.TrimSpace(rest[flags:])
		if op == "s" && (strings.ContainsAny(f, "ecdr") || !perlPlainPattern(parts[0]) || !perlPlainReplacement(parts[1])) {
			return false
		}
		if op == "tr" && strings.ContainsAny(f, "gimsxn") {
			return false
		}
		if strings.HasPrefix(rest, ";") {
			rest = strings.TrimSpace(rest[1:])
		} else if rest != "" {
			return false
		}
	}
	return true
}

// perlPlainPattern: a regular expression without embedded code and without
// interpolated variables or arrays (which could hold code under re 'eval').
func perlPlainPattern(p string) bool {
	if strings.Contains(p, "(?{") || strings.Contains(p, "(??{") || strings.Contains(p, "(*{") || strings.Contains(p, "@") {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '$':
			// An end-of-line anchor: at the end, before ) or |.
			if i+1 < len(p) && !strings.ContainsRune(")|", rune(p[i+1])) {
				return false
			}
		}
	}
	return true
}

// perlPlainReplacement: a replacement that interpolates only match groups.
func perlPlainReplacement(r string) bool {
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case '\\':
			i++
		case '@':
			return false
		case '$':
			switch {
			case i+1 < len(r) && (r[i+1] >= '0' && r[i+1] <= '9' || r[i+1] == '&'):
			case i+2 < len(r) && r[i+1] == '{' && r[i+2] >= '0' && r[i+2] <= '9' && strings.HasPrefix(strings.TrimLeft(r[i+2:], "0123456789"), "}"):
			default:
				return false
			}
		}
	}
	return true
}

// interpreterHazard: an interpreter is run on a script file; inline code,
// its stdin or a module other than the usual test and lint tools is a
// hazard.
func interpreterHazard(prog string, args []string) string {
	modules := map[string]bool{"pytest": true, "unittest": true, "mypy": true, "black": true, "ruff": true,
		"pip": true, "venv": true, "build": true, "flake8": true, "pylint": true, "isort": true, "coverage": true, "tox": true}
	for i, a := range args {
		if a == "--" {
			if i+1 < len(args) {
				return ""
			}
			return a
		}
		if a == "-" {
			return a
		}
		if len(a) < 2 || a[0] != '-' {
			return "" // the script file
		}
		switch prog {
		case "python", "python3":
			if a == "-m" {
				if i+1 < len(args) && modules[args[i+1]] {
					return ""
				}
				return a
			}
			if strings.ContainsAny(a[1:], "c") && !strings.HasPrefix(a, "--") {
				return a
			}
			if a == "--version" || a == "-V" {
				return ""
			}
		case "node", "nodejs", "deno", "bun":
			if a == "--version" || a == "-v" {
				return ""
			}
			return a // -e, -p, --eval, --require, --import, --loader...
		default:
			if a == "--version" || a == "-v" || a == "-V" {
				return ""
			}
			return a // -c, -e, -s, -i, -r, -n, -E ...
		}
	}
	return prog // no script: the interpreter reads its stdin
}

// goRunRemote: go run of a module path (go run example.com/x@latest)
// downloads and runs code that is not the workspace's.
func goRunRemote(c *Command) string {
	pos := c.Positionals()
	if len(pos) < 2 || pos[0] != "run" {
		return ""
	}
	p := pos[1]
	if strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/") || strings.HasSuffix(p, ".go") {
		return ""
	}
	first, _, _ := strings.Cut(p, "/")
	if strings.Contains(p, "@") || strings.Contains(first, ".") {
		return p
	}
	return ""
}

// gitConfigHazard: git config that sets, unsets or edits a value (a key
// such as core.fsmonitor or alias.x runs code at the next git command).
func gitConfigHazard(c *Command) string {
	pos := c.Positionals()
	if len(pos) == 0 || pos[0] != "config" {
		return ""
	}
	for _, a := range c.Args() {
		switch {
		case a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "-l" || a == "--list" ||
			a == "--show-origin" || a == "--show-scope" || a == "--name-only" || a == "get" || a == "list":
			return ""
		}
	}
	if len(pos) <= 2 {
		return "" // git config KEY reads it
	}
	return "config"
}

// dirOptions lists, per program, the options whose value is a directory
// the program works in (or a file whose directory it is).
var dirOptions = sync.OnceValue(func() map[string]struct {
	long  []string
	short []string
} {
	return map[string]struct {
		long  []string
		short []string
	}{
		"git":    {long: []string{"--git-dir", "--work-tree"}, short: []string{"-C"}},
		"make":   {long: []string{"--directory"}, short: []string{"-C"}},
		"gmake":  {long: []string{"--directory"}, short: []string{"-C"}},
		"go":     {short: []string{"-C"}},
		"npm":    {long: []string{"--prefix"}},
		"pnpm":   {long: []string{"--dir"}, short: []string{"-C"}},
		"yarn":   {long: []string{"--cwd"}},
		"cargo":  {long: []string{"--manifest-path"}, short: []string{"-C"}},
		"uv":     {long: []string{"--directory", "--project"}},
		"poetry": {long: []string{"--directory"}, short: []string{"-C"}},
		"tar":    {long: []string{"--directory"}, short: []string{"-C"}},
		"env":    {long: []string{"--chdir"}, short: []string{"-C"}},
	}
})

// Dirs returns the directories the command works in besides the current
// one, as written: a cd or pushd operand, and the values of git -C,
// --git-dir and --work-tree, make -C, go -C, env -C (as a wrapper too),
// npm --prefix, yarn --cwd, cargo -C and --manifest-path, tar -C, ...
// (GNU abbreviations of the long ones included).
func (c *Command) Dirs() []string {
	out := []string{}
	if (c.Program == "cd" || c.Program == "pushd") && len(c.Argv) > 1 {
		if ops := c.Operands(); len(ops) > 0 {
			out = append(out, ops[0])
		} else {
			out = append(out, "~")
		}
	} else if c.Program == "cd" {
		out = append(out, "~")
	}
	if spec, ok := dirOptions()[c.Program]; ok {
		out = append(out, optionValues(c.Args(), spec.long, spec.short)...)
	}
	for _, w := range c.Wrappers {
		if spec, ok := dirOptions()[w.Program]; ok && len(w.Argv) > 1 {
			out = append(out, optionValues(w.Argv[1:], spec.long, spec.short)...)
		}
	}
	return out
}

// optionValues returns the values of the options in args (before "--").
func optionValues(args []string, long, short []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a, "=")
			for _, l := range long {
				if name == l || len(name) >= 5 && strings.HasPrefix(l, name) {
					if !hasValue && i+1 < len(args) {
						value = args[i+1]
						i++
					}
					out = append(out, value)
					break
				}
			}
			continue
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		for _, s := range short {
			if strings.HasPrefix(a, s) {
				v := a[len(s):]
				if v == "" && i+1 < len(args) {
					v = args[i+1]
					i++
				}
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// curlSends are curl's options that send data, read a file or a config of
// options, change the request's method, or reach a local socket (curl's
// manual: --data, --form, --upload-file, --json, --config, --request,
// --unix-socket, --variable, --engine, ...). A GET of a URL uses none.
var curlSends = sync.OnceValue(func() map[string]bool {
	return longs("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "-F",
		"--form", "--form-string", "-T", "--upload-file", "--json", "-K", "--config", "-X", "--request",
		"--unix-socket", "--abstract-unix-socket", "--engine", "--variable", "--netrc-file", "-b", "--cookie",
		"--proto-default", "--ftp-method", "--mail-from", "--mail-rcpt", "--expand-url", "-G", "--get",
		"--upload", "-Q", "--quote", "--preproxy", "--socks5", "--doh-url", "-K")
})

// wgetSends are wget's options that send data, run a command, or read
// their URLs or commands from a file (wget's manual: --post-data,
// --body-file, --method, --execute runs a .wgetrc command, --use-askpass
// runs a program, --input-file, --config).
var wgetSends = sync.OnceValue(func() map[string]bool {
	return longs("--post-data", "--post-file", "--body-data", "--body-file", "--method", "-e", "--execute",
		"--use-askpass", "-i", "--input-file", "--config", "--load-cookies", "-B", "--base")
})

// fetchURL matches what curl and wget fetch with a GET: an http(s) or
// ftp(s) URL, or a host name they complete with http://.
var fetchURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^((https?|ftps?)://[^\s]+|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(:[0-9]+)?(/[^\s]*)?)$`)
})

// fetchHazard: a download (curl, wget) that sends data, reads options or
// URLs from a file, runs a command, or fetches anything but an http(s) or
// ftp URL (file://, dict://, gopher://, a local socket) is a hazard; the
// option and its value as the command wrote them. An option the model does
// not know takes no value, so a value it does take is an operand that is
// no URL: the safe side.
func fetchHazard(args []string, spec writeSpec, sends map[string]bool) string {
	opts, operands := spec.scan(args)
	for _, o := range opts {
		if sends[o.name] {
			return o.name
		}
		if strings.HasPrefix(o.value, "@") {
			return o.name + " " + o.value // a value read from a file
		}
	}
	for _, a := range args {
		if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "--") && sends[name] {
			return a
		}
	}
	for _, o := range operands {
		if !fetchURL().MatchString(o) {
			return o
		}
	}
	return ""
}

package shell

import (
	"path"
	"strings"
	"sync"
)

// The programs whose writes depend on a subcommand, an old-style option
// cluster or the text they read: go, git, tar, find and patch.

// goFileFlags are the flags of go build and go test whose value is a file
// written (also as -test.NAME).
var goFileFlags = sync.OnceValue(func() map[string]bool {
	return longs("o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace")
})

// goValueFlags are the other flags of the go command that take a value.
var goValueFlags = sync.OnceValue(func() map[string]bool {
	return longs("C", "tags", "ldflags", "gcflags", "asmflags", "gccgoflags", "p", "run", "bench", "count",
		"timeout", "exec", "coverpkg", "covermode", "mod", "modfile", "overlay", "pgo", "pkgdir", "toolexec",
		"buildmode", "compiler", "installsuffix", "benchtime", "cpu", "parallel", "list", "skip", "shuffle", "fuzz",
		"fuzztime", "fuzzminimizetime", "blockprofilerate", "memprofilerate", "mutexprofilefraction", "vet",
		"outputdir", "reldir")
})

// goReadOnly are the go subcommands that write no file a rule names.
var goReadOnly = sync.OnceValue(func() map[string]bool {
	return longs("vet", "list", "version", "env", "doc", "help", "bug")
})

// goWrites reads go build -o, go test's output and profile flags (-flag
// value, -flag=value, one or two dashes) and go install's binaries
// ($GOBIN or ~/go/bin, one per package, named after its last element; a
// package whose name is not in the command, such as . or ./..., gives
// GOBIN/*). The other subcommands that run or write code (run, generate,
// tool, mod, fmt, ...) are not known: known is false.
func (c *Command) goWrites() (targets []string, known bool) {
	args := c.Args()
	var sub string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-C" || a == "--C" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		sub, rest = a, args[i+1:]
		break
	}
	if sub == "" || goReadOnly()[sub] {
		return nil, true
	}
	if sub != "build" && sub != "test" && sub != "install" {
		return possibleFiles(rest), false
	}
	var out, files, pkgs []string
	outputDir := ""
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "-args" || a == "--args" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pkgs = append(pkgs, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		name = strings.TrimPrefix(name, "test.")
		takes := goFileFlags()[name] || goValueFlags()[name]
		if takes && !hasValue && i+1 < len(rest) {
			i++
			value = rest[i]
		}
		switch {
		case goFileFlags()[name]:
			files = append(files, value)
		case name == "outputdir":
			outputDir = value
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	wideOutputDir := overJoined(len(files), outputDir)
	for _, f := range files {
		out = append(out, f)
		if outputDir != "" && !wideOutputDir && !path.IsAbs(f) && !strings.HasPrefix(f, "~") {
			out = append(out, strings.TrimRight(outputDir, "/")+"/"+f)
		}
	}
	if outputDir != "" && wideOutputDir {
		out = append(out, spread(outputDir))
	}
	if sub == "build" && len(files) > 0 {
		// The last -o decides; it may name a directory: one binary per
		// package in it.
		f := files[len(files)-1]
		out = joinAll(out, f, pkgs, func(p string) string { return strings.TrimRight(f, "/") + "/" + goBinaryName(p) })
	}
	if sub == "install" {
		bin := "~/go/bin"
		if d := c.Env["GOBIN"]; d != "" {
			bin = d
		} else if d := c.Env["GOPATH"]; d != "" {
			bin = strings.TrimRight(d, "/") + "/bin"
		}
		out = joinAll(out, bin, pkgs, func(p string) string { return bin + "/" + goBinaryName(p) })
	}
	return out, true
}

// goBinaryName is the name go build and go install give the binary of a
// package: its last path element without @version, or "*" when the
// command does not say it (., ./..., a pattern).
func goBinaryName(pkg string) string {
	pkg, _, _ = strings.Cut(pkg, "@")
	b := path.Base(strings.TrimRight(pkg, "/"))
	if b == "." || b == ".." || b == "..." || b == "/" || strings.Contains(pkg, "...") || b == "" {
		return "*"
	}
	return b
}

// gitWrites covers the git subcommands that write files a command names:
// apply and am (the paths of here-document patches, --directory), checkout,
// restore, rm and mv (their paths), clone, init and worktree add (the new
// directory), config --file, and the -o/--output of archive, format-patch,
// diff, log and show.
func (c *Command) gitWrites() []string {
	args := c.Args()
	values := globalValueOptions()["git"]
	var sub string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' {
			if values[a] {
				i++
			}
			continue
		}
		sub, rest = a, args[i+1:]
		break
	}
	spec := writeSpec{opts: merge(roles(optFile, "-o", "--output", "--file"), roles(optSpread, "--directory"),
		roles(optValue, "-m", "-b", "-B", "-c", "-p", "--depth", "--branch", "--origin", "--template",
			"--reference", "--separate-git-dir", "--format", "--prefix", "-C", "--exclude", "--include"))}
	opts, operands := spec.scan(rest)
	var out []string
	for _, o := range opts {
		switch o.role {
		case optFile:
			if sub == "format-patch" {
				out = append(out, spread(o.value))
			} else {
				out = append(out, o.value)
			}
		case optSpread:
			if sub == "apply" || sub == "am" {
				out = append(out, spread(o.value))
			}
		}
	}
	switch sub {
	case "apply", "am":
		out = append(out, c.stdinPatchPaths()...)
	case "checkout", "restore", "rm", "mv", "switch":
		out = append(out, operands...)
	case "clone":
		if len(operands) >= 2 {
			out = append(out, spread(operands[len(operands)-1]))
		}
	case "init":
		for _, o := range operands {
			out = append(out, spread(o))
		}
	case "worktree":
		if len(operands) >= 2 && operands[0] == "add" {
			out = append(out, spread(operands[1]))
		}
	case "bundle":
		if len(operands) >= 2 && operands[0] == "create" {
			out = append(out, operands[1])
		}
	}
	return out
}

// stdinPatchPaths are the file names in the headers of patches fed to the
// command by a here-document or here-string.
func (c *Command) stdinPatchPaths() []string {
	var out []string
	for _, r := range c.Redirects {
		if r.Op == "<<" || r.Op == "<<-" || r.Op == "<<<" {
			out = append(out, PatchPaths(r.Body)...)
		}
	}
	return out
}

// PatchPaths returns the file names a patch text names: the paths of
// unified and context diff headers (--- a/x, +++ b/x, *** x, each also
// without its first component, as patch -p1 and git apply strip it) and of
// Codex apply_patch headers (*** Add File: x, *** Update File:,
// *** Delete File:, *** Move to:). Headers are read leniently: leading
// blanks and a trailing carriage return are ignored.
func PatchPaths(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		var p string
		switch {
		case strings.HasPrefix(line, "*** ") && strings.Contains(line, ":"):
			head, rest, _ := strings.Cut(line[4:], ":")
			switch strings.TrimSpace(head) {
			case "Add File", "Update File", "Delete File", "Move to":
				out = append(out, strings.TrimSpace(rest))
			}
			continue
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "*** "):
			p = strings.TrimSpace(line[4:])
		case strings.HasPrefix(line, "diff --git "):
			for _, f := range strings.Fields(line[len("diff --git "):]) {
				out = append(out, stripComponent(f)...)
			}
			continue
		default:
			continue
		}
		if i := strings.IndexByte(p, '\t'); i >= 0 {
			p = p[:i]
		}
		if p == "" || p == "/dev/null" || strings.Trim(p, "-*") == "" {
			continue
		}
		out = append(out, stripComponent(p)...)
	}
	return out
}

// stripComponent returns the path and, when it has one, the path without
// its first component (b/x -> x).
func stripComponent(p string) []string {
	if _, rest, ok := strings.Cut(p, "/"); ok && rest != "" {
		return []string{p, rest}
	}
	return []string{p}
}

// tarShortValues are the letters of tar's short options that take a value.
const tarShortValues = "fCTXbgNIHVKLF"

var tarSpec = sync.OnceValue(func() writeSpec {
	return writeSpec{opts: merge(
		roles(optFile, "-f", "--file", "-g", "--listed-incremental", "--index-file"),
		roles(optValue, "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from", "-b", "--blocking-factor",
			"-N", "--newer", "--after-date", "-I", "--use-compress-program", "-H", "--format", "-V", "--label", "-K",
			"--starting-file", "-L", "--tape-length", "-F", "--info-script", "--exclude", "--transform", "--xform",
			"--to-command", "--owner", "--group", "--mode", "--mtime", "--strip-components", "--checkpoint-action"))}
})

// tarWrites: the archive (-f) and incremental snapshot files, and, when
// extracting (-x, --extract, --get), DIR/** for -C DIR (the members' names
// are in the archive), or /** with -P (absolute member names). The old
// style (tar xzf a.tgz -C d, values in the order of their letters) is
// read as its dashed form.
func tarWrites(args []string) []string {
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		var norm []string
		k := 1
		for _, l := range args[0] {
			norm = append(norm, "-"+string(l))
			if strings.ContainsRune(tarShortValues, l) && k < len(args) {
				norm = append(norm, args[k])
				k++
			}
		}
		args = append(norm, args[k:]...)
	}
	opts, _ := tarSpec().scan(args)
	extract := hasOpt(opts, "-x") || hasOpt(opts, "--extract") || hasOpt(opts, "--get")
	var out, dirs []string
	for _, o := range opts {
		switch {
		case o.role == optFile:
			out = append(out, o.value)
		case o.name == "-C" || o.name == "--directory":
			dirs = append(dirs, o.value)
		case extract && (o.name == "-P" || o.name == "--absolute-names"):
			out = append(out, "/**")
		}
	}
	if extract {
		for _, d := range dirs {
			out = append(out, spread(d))
		}
	}
	return out
}

// findWrites: the files of -fprint, -fprint0, -fprintf and -fls; when find
// deletes (-delete) or runs a command on what it finds (-exec, -execdir,
// -ok, -okdir), its starting points; and when it deletes, what it may
// match (ROOT/**/NAME for the -name and -iname tests, or ROOT/**). The
// command of an -exec writes what its own analysis says, with {} read as
// those patterns (see Command.Writes).
func findWrites(args []string) []string {
	m := scanFind(args)
	if !m.acts && !m.deletes {
		return m.files
	}
	out := append(m.files, m.roots...)
	if m.deletes {
		out = append(out, m.matches()...)
	}
	return out
}

// findModel is what a find command line says about the paths it visits.
type findModel struct {
	roots []string
	// names are the patterns of the -name and -iname tests (an -iname as a
	// case-folded pattern), nil when the tests do not restrict the names
	// find acts on (no name test, a negation, or an -o with another test).
	names   []string
	files   []string // -fprint and the like
	acts    bool     // -exec, -execdir, -ok or -okdir
	deletes bool     // -delete
}

// findTests are the primaries of find that test a file (the others are
// options, which hold for every file, and actions).
var findTests = sync.OnceValue(func() map[string]bool {
	return longs("-amin", "-anewer", "-atime", "-cmin", "-cnewer", "-ctime", "-empty", "-executable",
		"-false", "-fstype", "-gid", "-group", "-ilname", "-iname", "-inum", "-ipath", "-iregex", "-iwholename",
		"-links", "-lname", "-mmin", "-mtime", "-name", "-newer", "-nogroup", "-nouser", "-path", "-perm",
		"-readable", "-regex", "-samefile", "-size", "-true", "-type", "-uid", "-used", "-user", "-wholename",
		"-writable", "-xtype", "-context")
})

// scanFind reads find's starting points, name tests and actions. The words
// of an -exec's command are skipped. Name tests restrict the match only
// when nothing can widen them: no ! or -not (find . ! -name '*.go'
// -delete deletes all but the Go files), no comma, and under -o only name
// tests (-name a -o -type f matches every file).
func scanFind(args []string) findModel {
	var m findModel
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == ")" {
			break
		}
		m.roots = append(m.roots, a)
	}
	if len(m.roots) == 0 {
		m.roots = []string{"."}
	}
	negated, or, otherTest, wide := false, false, false, false
	for ; i < len(args); i++ {
		switch a := args[i]; a {
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				m.files = append(m.files, args[i+1])
				i++
			}
		case "-name", "-iname":
			if i+1 < len(args) {
				n := args[i+1]
				if a == "-iname" {
					// A bracket class under -iname matches either case:
					// the name is not folded, it is any name.
					wide = wide || strings.Contains(n, "[")
					n = caseFold(n)
				}
				m.names = append(m.names, n)
				i++
			}
		case "-delete":
			m.deletes = true
		case "-exec", "-execdir", "-ok", "-okdir":
			m.acts = true
			for i+1 < len(args) && args[i+1] != ";" && args[i+1] != "+" {
				i++
			}
			i++
		case "!", "-not", ",":
			negated = true
		case "-o", "-or":
			or = true
		default:
			otherTest = otherTest || findTests()[a]
		}
	}
	if negated || wide || or && otherTest {
		m.names = nil
	}
	return m
}

// maxFindRoots bounds the commands of a find -exec analysed once per
// starting point: past it, {} is read as /** (any path).
const maxFindRoots = 16

// matches are the patterns of the paths find acts on: ROOT/**/NAME for
// the name tests (one pattern per name, or {a,b} when there are many),
// else ROOT/** (the root and its whole tree), per starting point.
func (m findModel) matches() []string {
	alt := ""
	switch len(m.names) {
	case 0:
	case 1:
		alt = altSafe(m.names[0])
	default:
		esc := make([]string, len(m.names))
		for i, n := range m.names {
			esc[i] = altSafe(n)
		}
		alt = "{" + strings.Join(esc, ",") + "}"
	}
	wide := alt == "" || overJoined(len(m.roots), alt)
	// A few names: one pattern each, so that each is read on its own.
	split := len(m.names) > 1 && len(m.roots)*len(m.names) <= maxFindRoots
	out := make([]string, 0, len(m.roots))
	for _, r := range m.roots {
		root := strings.TrimRight(escapeGlob(r), "/")
		switch {
		case wide:
			out = append(out, root+"/**")
		case split:
			for _, n := range m.names {
				out = append(out, root+"/**/"+altSafe(n))
			}
		default:
			out = append(out, root+"/**/"+alt)
		}
	}
	return out
}

// altSafe is a find name pattern as a doublestar pattern: find's patterns
// have no braces, so {, } and , are literal.
func altSafe(s string) string {
	r := strings.NewReplacer("{", "[{]", "}", "[}]", ",", "[,]")
	return r.Replace(s)
}

// caseFold turns a name pattern into one that matches it in any case, as
// -iname does: each ASCII letter becomes [xX] (a pattern with a bracket
// class is not folded: scanFind drops its restriction).
func caseFold(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			lo, up := c|0x20, c&^0x20
			b.WriteString("[" + string(lo) + string(up) + "]")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// escapeGlob returns s as a doublestar pattern that matches s alone (see
// escapeGlobTo).
func escapeGlob(s string) string {
	var b strings.Builder
	escapeGlobTo(&b, s)
	return b.String()
}

var patchSpec = sync.OnceValue(func() writeSpec {
	return writeSpec{opts: merge(
		roles(optFile, "-o", "--output", "-r", "--reject-file"),
		roles(optSpread, "-d", "--directory", "-B", "--prefix"),
		roles(optValue, "-i", "--input", "-p", "--strip", "-D", "--ifdef", "-F", "--fuzz", "-V",
			"--version-control", "-Y", "--basename-prefix", "-z", "--suffix", "-g", "--get", "--quoting-style"))}
})

// patchWrites: the file patched (the first operand), -o and the reject
// file, -d DIR and -B PREFIX as DIR/**, and the paths of a patch fed by a
// here-document. A patch read from a file (patch -p1 < x.diff) names its
// files in that file, which the command does not show.
func (c *Command) patchWrites() []string {
	opts, operands := patchSpec().scan(c.Args())
	var out []string
	for _, o := range opts {
		switch o.role {
		case optFile:
			out = append(out, o.value)
		case optSpread:
			out = append(out, spread(o.value))
		}
	}
	if len(operands) > 0 {
		out = append(out, operands[0])
	}
	return append(out, c.stdinPatchPaths()...)
}

// celguardWrites: celguard init DIR writes policies into DIR (DIR/**); its
// other subcommands write nothing a command names (hook install and trust
// write the hosts' settings and the trust store, which the commands do not
// name: a policy asks before them).
func (c *Command) celguardWrites() []string {
	if c.Subcommand() != "init" {
		return nil
	}
	var out []string
	for _, o := range c.Positionals()[1:] {
		out = append(out, spread(o))
	}
	return out
}

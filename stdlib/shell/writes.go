package shell

import (
	"path"
	"strings"
	"sync"
)

// Writes returns the words naming the files and directories the command
// would write, create, truncate, move, link, change the mode of or delete,
// as written (quotes removed, ~ and globs kept), and whether the program
// is one the analysis knows (see WriteTargets for the rules).
//
// A target is a glob pattern as the shell reads it: in the target of a
// redirection and in the operands of a program that does not glob its own
// arguments (rm, cp, touch, tee, ...), a glob character the shell takes
// literally ('a*', "x(1)", a\[b) is escaped with a backslash, so that a
// quoted name is matched as the one name it is. The words of a program the
// table does not know are kept as written: such a program may glob them
// itself.
//
// A program the write table knows reports what its options and operands
// say: cp a b writes b (and b/a, should b be a directory), sort -o f
// writes f, tar -x -C d writes d/** (names only known when it runs). A
// program it does not know is assumed to write every word that may name a
// file; a program known to only read (cat, ls, grep, ...) writes nothing
// but its redirections. A command of a string that did not parse (Via
// "fallback") is read like a program the table does not know.
func (c *Command) Writes() (targets []string, known bool) {
	out := c.redirectWrites()
	switch p := c.Program; {
	case c.Via == "fallback":
		// A string that did not parse: its words are a best-effort split
		// (a redirection may be a word), so every word counts.
		return append(out, possibleFiles(c.Args())...), false
	case p == "":
		return out, true
	case readOnlyPrograms()[p]:
		return out, true
	case (p == "awk" || p == "gawk" || p == "mawk" || p == "nawk") && awkHazard(c.Args()) == "":
		// A program without system(), pipes, getline or > writes
		// nothing itself (shell.hazard).
		return out, true
	case p == "go":
		t, ok := c.goWrites()
		return append(out, t...), ok
	case p == "git":
		return append(out, c.gitWrites()...), true
	case p == "tar":
		return append(out, tarWrites(c.Args())...), true
	case p == "find":
		return append(out, findWrites(c.Args())...), true
	case p == "perl":
		if t, ok := perlWrites(c.Args()); ok {
			return append(out, t...), true
		}
		return append(out, possibleFiles(c.findArgs())...), false
	case p == "patch":
		return append(out, c.patchWrites()...), true
	case shellPrograms()[p] && c.HasFlag("-c"):
		// The script is parsed: its commands are analysed on their own.
		// The words after it are its $0, $1, ...: they may name files.
		if ops := c.Operands(); len(ops) > 1 {
			return append(out, possibleFiles(ops[1:])...), true
		}
		return out, true
	case p == "make" || p == "gmake":
		// make writes through its recipes, which are the workspace's
		// code; its words name targets, makefiles, directories and
		// variables (DESTDIR=~/x, --file=/tmp/x.mk), but its job and load
		// options (-j"$(nproc)", -l2) name nothing.
		var words []string
		for _, a := range c.Args() {
			if !strings.HasPrefix(a, "-j") && !strings.HasPrefix(a, "-l") && !strings.HasPrefix(a, "--jobs") &&
				!strings.HasPrefix(a, "--load") {
				words = append(words, a)
			}
		}
		return append(out, possibleFiles(words)...), false
	case p == "celguard":
		return append(out, c.celguardWrites()...), true
	case p == "apply_patch": // Codex's patch tool run as a command: the patch is an argument or stdin
		for _, a := range c.Args() {
			out = append(out, PatchPaths(a)...)
		}
		return append(out, c.stdinPatchPaths()...), true
	}
	if spec, ok := writeSpecs()[c.Program]; ok {
		args := c.findArgs()
		if c.linkOnly {
			spec = linkSpec()
		}
		if !globsOwnArgs()[c.Program] {
			args = c.patternArgs()
		}
		return append(out, spec.writes(args)...), true
	}
	return append(out, possibleFiles(c.findArgs())...), false
}

// writeRedirectOps are the redirection operators that open their target
// for writing.
var writeRedirectOps = map[string]bool{">": true, ">>": true, ">|": true, "&>": true, "&>>": true, "<>": true, ">&": true}

// redirectWrites are the targets of the command's output redirections
// (not a duplication such as 2>&1 or >&-).
func (c *Command) redirectWrites() []string {
	out := []string{}
	for _, r := range c.Redirects {
		if !writeRedirectOps[r.Op] || r.Target == "" {
			continue
		}
		if r.Op == ">&" && isFDWord(r.Target) {
			continue
		}
		if r.pattern != "" {
			out = append(out, r.pattern)
			continue
		}
		out = append(out, r.Target)
	}
	return out
}

// globsOwnArgs lists the programs of the write table that read some
// operands as patterns of their own (zip's and rsync's wildcards, ar's
// members): their words are kept as written.
var globsOwnArgs = sync.OnceValue(func() map[string]bool {
	return longs("zip", "unzip", "rsync", "ar")
})

// patternArgs is Args with each word in its pattern form (see patternOf):
// the glob characters the shell takes literally escaped.
func (c *Command) patternArgs() []string {
	args := c.Args()
	if c.argvPattern == nil && c.argvFind == nil {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if c.argvPattern != nil && c.argvPattern[i+1] != "" {
			out[i] = c.argvPattern[i+1]
		}
		if c.argvFind != nil && c.argvFind[i+1] != "" {
			out[i] = c.argvFind[i+1]
		}
	}
	return out
}

// findArgs is Args with each word of a find -exec's command that holds {}
// as the pattern of the paths find passes (argvFind).
func (c *Command) findArgs() []string {
	args := c.Args()
	if c.argvFind == nil {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if p := c.argvFind[i+1]; p != "" {
			out[i] = p
		}
	}
	return out
}

func isFDWord(s string) bool {
	if s == "-" {
		return true
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// readOnlyPrograms change no file of their own accord: only their
// redirections write. (An interpreter or editor is not one of them: sed,
// awk, perl and python can write any file their script names, so they are
// analysed like programs the table does not know.)
var readOnlyPrograms = sync.OnceValue(func() map[string]bool {
	return longs("cat", "ls", "grep", "egrep", "fgrep", "rg", "ag", "head", "tail", "less", "more",
		"wc", "file", "stat", "diff", "cmp", "echo", "printf", "pwd", "cd", "pushd", "popd", "test", "[", "true",
		"false", "which", "type", "whereis", "realpath", "readlink", "dirname", "basename", "md5sum", "sha1sum",
		"sha256sum", "sha512sum", "b2sum", "cksum", "jq", "du", "df", "tree", "nl", "od", "hexdump", "xxd", "strings",
		"column", "cut", "tr", "uniq", "comm", "join", "paste", "fold", "fmt", "expand", "unexpand", "rev", "tac",
		"seq", "date", "env", "printenv", "id", "whoami", "hostname", "uname", "sleep", "exit", "return", "bat",
		"fd", "sha224sum", "sha384sum", "md5", "shasum", "zcat", "bzcat", "xzcat", "zgrep", "lsof", "ps", "top")
})

// optRole says what an option's value is to the write analysis.
type optRole uint8

const (
	optNone   optRole = iota // a flag without a value
	optValue                 // takes a value that is not written
	optFile                  // the value is a file written
	optDir                   // the value is the destination directory of every operand (cp -t)
	optSpread                // the value is a directory where files of unknown names are written (DIR/**)
	optAll                   // a flag that makes every operand written (cp -s, install -d)
)

// operandRole says which operands a program writes.
type operandRole uint8

const (
	operandsNone operandRole = iota
	operandsAll              // every operand (rm, touch, chmod, tee)
	operandsLast             // the last is the destination (cp, install, rsync): it, and dest/base(src) per source
	operandsMove             // like last, and the sources are removed too (mv, ln: a link names them)
)

// writeSpec describes the options and operands of a program that writes.
type writeSpec struct {
	operands operandRole
	// opts maps an option ("-o", "--output") to its role; short options
	// are one letter after "-", long ones take GNU abbreviations
	// (--out for --output) and "--opt=value".
	opts map[string]optRole
	// assign lists operand prefixes naming a written file ("of=" for dd).
	assign []string
	// tree lists flags under which a written operand names a whole tree
	// (rm -r, chmod -R): it is also reported as WORD/**.
	tree []string
}

func roles(role optRole, names ...string) map[string]optRole {
	m := make(map[string]optRole, len(names))
	for _, n := range names {
		m[n] = role
	}
	return m
}

func merge(ms ...map[string]optRole) map[string]optRole {
	out := map[string]optRole{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var (
	copyValues = roles(optValue, "-S", "--suffix")
	copyDir    = roles(optDir, "-t", "--target-directory")
	recursive  = []string{"-r", "-R", "--recursive"}
)

// writeSpecs is the write table: per program, where its output goes.
var writeSpecs = sync.OnceValue(func() map[string]writeSpec {
	return map[string]writeSpec{
		"rm":       {operands: operandsAll, tree: recursive},
		"rmdir":    {operands: operandsAll},
		"unlink":   {operands: operandsAll},
		"shred":    {operands: operandsAll},
		"touch":    {operands: operandsAll},
		"truncate": {operands: operandsAll},
		"mkdir":    {operands: operandsAll},
		"mkfifo":   {operands: operandsAll},
		"mknod":    {operands: operandsAll},
		"chmod":    {operands: operandsAll, tree: recursive},
		"chown":    {operands: operandsAll, tree: recursive},
		"chgrp":    {operands: operandsAll, tree: recursive},
		"chattr":   {operands: operandsAll, tree: []string{"-R"}},
		"setfacl":  {operands: operandsAll, tree: recursive},
		"tee":      {operands: operandsAll},
		"cp": {operands: operandsLast, opts: merge(copyValues, copyDir,
			roles(optAll, "-s", "--symbolic-link", "-l", "--link"))},
		"mv": {operands: operandsMove, opts: merge(copyValues, copyDir), tree: []string{""}},
		"ln": {operands: operandsMove, opts: merge(copyValues, copyDir), tree: []string{""}},
		"install": {operands: operandsLast, opts: merge(copyValues, copyDir,
			roles(optValue, "-m", "--mode", "-o", "--owner", "-g", "--group", "--strip-program"),
			roles(optAll, "-d", "--directory"))},
		"rsync": {operands: operandsLast, opts: merge(
			roles(optValue, "-e", "--rsh", "--exclude", "--include", "-f", "--filter", "--files-from",
				"--exclude-from", "--include-from", "--partial-dir", "-T", "--temp-dir", "--chmod", "--chown",
				"--timeout", "--port", "--password-file", "--compare-dest", "--copy-dest", "--link-dest",
				"--rsync-path", "--suffix", "--max-size", "--min-size", "--bwlimit", "--out-format", "--usermap",
				"--groupmap", "--contimeout", "--iconv", "--log-file-format", "-B", "--block-size", "--read-batch"),
			roles(optFile, "--log-file", "--write-batch", "--only-write-batch"),
			roles(optSpread, "--backup-dir"))},
		"dd":   {assign: []string{"of="}},
		"sort": {opts: merge(roles(optFile, "-o", "--output"), roles(optValue, "-k", "--key", "-t", "--field-separator", "-S", "--buffer-size", "-T", "--temporary-directory", "--batch-size", "--parallel", "--files0-from", "--compress-program", "--sort", "--random-source"))},
		"curl": {opts: merge(roles(optFile, "-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace",
			"--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"),
			roles(optSpread, "--output-dir"),
			roles(optValue, "-H", "--header", "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "-X",
				"--request", "-u", "--user", "-A", "--user-agent", "-e", "--referer", "-b", "--cookie", "-F", "--form",
				"-m", "--max-time", "-x", "--proxy", "-T", "--upload-file", "-K", "--config", "-w", "--write-out",
				"-r", "--range", "-E", "--cert", "--key", "--cacert", "--connect-timeout", "--retry", "-Y", "-y", "-z",
				"-C", "--continue-at", "--resolve", "--url"))},
		"wget": {opts: merge(roles(optFile, "-O", "--output-document", "-o", "--output-file", "-a", "--append-output",
			"--save-cookies", "--warc-file", "--save-headers"),
			roles(optSpread, "-P", "--directory-prefix"),
			roles(optValue, "-U", "--user-agent", "--header", "-t", "--tries", "-T", "--timeout", "-e", "--execute",
				"-i", "--input-file", "--load-cookies", "--post-data", "--post-file", "-l", "--level", "-A", "--accept",
				"-R", "--reject", "-D", "--domains", "--user", "--password"))},
		"unzip": {opts: merge(roles(optSpread, "-d"), roles(optValue, "-x"))},
		"ar":    {operands: operandsAll},
		"zip":   {opts: roles(optValue, "-x", "-i", "-b", "-n", "-t", "-tt"), operands: operandsAll},
	}
})

// linkSpec is ln's spec for a symbolic link made last in its line: the
// link names (the destination, and dest/base(target) in a directory), not
// the targets.
var linkSpec = sync.OnceValue(func() writeSpec {
	return writeSpec{operands: operandsLast, opts: merge(copyValues, copyDir)}
})

// scan splits a command's words into its options (with their values) and
// its operands.
func (s writeSpec) scan(args []string) (opts []parsedOpt, operands []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return opts, append(operands, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a)
			continue
		}
		opts = append(opts, s.parseOption(args, &i)...)
	}
	return opts, operands
}

// writes applies the spec to a command's words.
func (s writeSpec) writes(args []string) []string {
	var out, dirs, tree []string
	all, treeFlag := false, false
	opts, operands := s.scan(args)
	for _, o := range opts {
		switch o.role {
		case optFile:
			out = append(out, o.value)
		case optDir:
			dirs = append(dirs, o.value)
		case optSpread:
			out = append(out, spread(o.value))
		case optAll:
			all = true
		}
	}
	for _, f := range s.tree {
		treeFlag = treeFlag || f == "" || hasOpt(opts, f)
	}
	for _, o := range operands {
		for _, p := range s.assign {
			if v, ok := strings.CutPrefix(o, p); ok {
				out = append(out, v)
			}
		}
	}
	written := operands
	switch s.operands {
	case operandsNone:
		written = nil
	case operandsLast:
		if !all {
			written = nil
		}
	}
	if s.operands == operandsLast || s.operands == operandsMove {
		srcs := operands
		if len(dirs) == 0 && len(operands) > 0 {
			dirs = operands[len(operands)-1:]
			srcs = operands[:len(operands)-1]
		}
		out = append(out, dirs...)
		if len(dirs) > 0 { // several -t are refused; the last one is the destination
			dest := dirs[len(dirs)-1]
			out = joinAll(out, dest, srcs, func(src string) string { return into(dest, src) })
		}
		tree = srcs
	}
	out = append(out, written...)
	if treeFlag {
		if s.operands == operandsAll {
			tree = written
		}
		for _, t := range tree {
			out = append(out, spread(t))
		}
	}
	return out
}

func hasOpt(opts []parsedOpt, name string) bool {
	for _, o := range opts {
		if o.name == name {
			return true
		}
	}
	return false
}

// into is where src lands when copied or moved into the directory dir:
// dir/base(src), or dir/** when the name is not known (src/., src/ for
// rsync, a glob).
func into(dir, src string) string {
	b := path.Base(strings.TrimRight(src, "/"))
	if strings.HasSuffix(src, "/") || strings.HasSuffix(src, "/.") || b == "." || b == "/" || b == ".." {
		return spread(dir)
	}
	return strings.TrimRight(dir, "/") + "/" + b
}

// maxJoined bounds the bytes Writes spends repeating one directory in front
// of many names (cp a b c ... DIR writes DIR/a, DIR/b, ...; find R1 R2 ...
// -name N1 -name N2 ... -delete): past it the names are summed up as DIR/**,
// a superset of them, so the work and the result of Writes stay linear in
// the size of the command instead of its square.
const maxJoined = 1 << 16

// overJoined reports whether writing dir (or a pattern) in front of each of
// n names would pass maxJoined bytes.
func overJoined(n int, dir string) bool { return n > 1 && n*(len(dir)+1) > maxJoined }

// joinAll appends name(x) for each of names, each a path under dir, or
// spread(dir) once when that would repeat dir past maxJoined bytes.
func joinAll(out []string, dir string, names []string, name func(string) string) []string {
	if overJoined(len(names), dir) {
		return append(out, spread(dir))
	}
	for _, x := range names {
		out = append(out, name(x))
	}
	return out
}

// spread is the pattern of every file under dir.
func spread(dir string) string {
	if dir == "" {
		return "**"
	}
	return strings.TrimRight(dir, "/") + "/**"
}

// parsedOpt is one option of a command line and its value.
type parsedOpt struct {
	name  string // "-o" or "--output" (resolved from an abbreviation)
	role  optRole
	value string
}

// parseOption reads the option at args[*i] (a word starting with "-"),
// advancing *i past a value taken from the next word. A cluster of short
// options (-rf, -ofile, -rto DIR) yields one entry per letter; a letter
// that takes a value ends the cluster, its value the rest of the word or
// the next word. A long option is resolved by GNU abbreviation: --out is
// --output when it is a prefix of that name; an ambiguous prefix (which
// the program would refuse) takes the role that writes, if any.
func (s writeSpec) parseOption(args []string, i *int) []parsedOpt {
	a := args[*i]
	next := func() string {
		if *i+1 < len(args) {
			*i++
			return args[*i]
		}
		return ""
	}
	if strings.HasPrefix(a, "--") {
		name, value, hasValue := strings.Cut(a, "=")
		full, role := s.resolveLong(name)
		if role == optNone || role == optAll {
			return []parsedOpt{{name: full, role: role}}
		}
		if !hasValue {
			value = next()
		}
		return []parsedOpt{{name: full, role: role, value: value}}
	}
	var out []parsedOpt
	for j := 1; j < len(a); j++ {
		name := "-" + a[j:j+1]
		role := s.opts[name]
		if role == optNone || role == optAll {
			out = append(out, parsedOpt{name: name, role: role})
			continue
		}
		value := a[j+1:]
		if value == "" {
			value = next()
		}
		return append(out, parsedOpt{name: name, role: role, value: value})
	}
	return out
}

// resolveLong resolves a long option name, possibly abbreviated.
func (s writeSpec) resolveLong(name string) (string, optRole) {
	if r, ok := s.opts[name]; ok {
		return name, r
	}
	if len(name) <= 2 {
		return name, optNone
	}
	best, bestRole := name, optNone
	for full, r := range s.opts {
		if !strings.HasPrefix(full, "--") || !strings.HasPrefix(full, name) {
			continue
		}
		if rank(r) > rank(bestRole) || rank(r) == rank(bestRole) && full < best {
			best, bestRole = full, r
		}
	}
	return best, bestRole
}

// rank orders roles for an ambiguous abbreviation: the ones that write
// first, so the analysis errs on the side of seeing a write.
func rank(r optRole) int {
	switch r {
	case optFile, optDir, optSpread:
		return 3
	case optAll:
		return 2
	case optValue:
		return 1
	}
	return 0
}

// possibleFiles are the words of a command the table does not know that
// may name a file: every word, the part after "=" or ":" of a word, the
// value glued to a short option (-o/x), and the file-like tokens of inline
// scripts (python -c "open('/x', 'w')").
func possibleFiles(args []string) []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(w string) {
		if w != "" && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, a := range args {
		add(a)
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			add(a[2:])
		}
		for _, tok := range strings.FieldsFunc(a, isScriptSeparator) {
			add(tok)
			if len(tok) > 2 && tok[0] == '-' && tok[1] != '-' {
				add(tok[2:])
			}
		}
	}
	return out
}

// isScriptSeparator splits a word into the tokens that may name a file:
// blanks, quotes, brackets of calls, "=", ":", ";", ",", pipes and
// redirections.
func isScriptSeparator(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\'', '"', '`', '(', ')', '=', ':', ';', ',', '<', '>', '|', '&':
		return true
	}
	return false
}

package shell

import (
	"strings"
	"sync"
	"unicode"
)

// Args returns Argv without argv[0].
func (c *Command) Args() []string {
	if len(c.Argv) == 0 {
		return nil
	}
	return c.Argv[1:]
}

// Dynamic reports whether any word of Argv is not a literal.
func (c *Command) Dynamic() bool {
	for _, d := range c.ArgvDynamic {
		if d {
			return true
		}
	}
	return false
}

// Operands returns the arguments that are not options: words that do not
// start with "-" (and every word after "--"). It cannot know which options
// take a value, so "-n 5" yields the operand "5"; for rules that deny, that
// errs on the side of seeing more.
func (c *Command) Operands() []string {
	out := []string{}
	args := c.Args()
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if len(a) > 1 && a[0] == '-' {
			continue
		}
		out = append(out, a)
	}
	return out
}

// HasFlag reports whether the command was given the flag. spec may list
// alternatives separated by "|": "-r|-R|--recursive". Matching:
//
//   - "--name" matches the word --name and --name=value;
//   - "-x" (one letter) matches -x inside any cluster of short options:
//     -x, -rx, -xr, -Rfx;
//   - any other spec ("-delete", "+x") matches the word exactly, or with
//     "=value".
//
// Options are looked for before "--" only; words that are not literals are
// ignored, except those whose expansions are all variables assigned a
// literal earlier in the same string (x=-rf; rm $x, or x='rm -rf /'; $x,
// which bash splits into the words rm, -rf and /): their value is known.
func (c *Command) HasFlag(spec string) bool {
	for _, alt := range strings.Split(spec, "|") {
		alt = strings.TrimSpace(alt)
		if alt != "" && c.hasOneFlag(alt) {
			return true
		}
	}
	return false
}

// HasFlags reports whether the command has every one of the flags (each may
// list alternatives, see HasFlag). HasFlags() with no specs is false.
func (c *Command) HasFlags(specs ...string) bool {
	if len(specs) == 0 {
		return false
	}
	for _, s := range specs {
		if !c.HasFlag(s) {
			return false
		}
	}
	return true
}

func (c *Command) hasOneFlag(f string) bool {
	short := len(f) == 2 && f[0] == '-' && f[1] != '-'
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		if a == "--" {
			return false
		}
		if i < len(c.ArgvDynamic) && c.ArgvDynamic[i] && !(i < len(c.argvResolved) && c.argvResolved[i]) {
			continue
		}
		switch {
		case short:
			if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], f[1]) >= 0 {
				return true
			}
		default:
			if strings.HasPrefix(a, f) && (len(a) == len(f) || a[len(f)] == '=') {
				return true
			}
		}
	}
	return false
}

// HasPrefix reports whether the command's words start with the words of
// prefix, compared whole: "git log" matches git log -p, not git logout. The
// first word of prefix is compared with Program (or with Path when it
// contains a "/"). Options are not skipped: "git push" does not match
// git -c k=v push (use HasSubcommand for that).
func (c *Command) HasPrefix(prefix string) bool {
	want := strings.Fields(prefix)
	if len(want) == 0 || len(c.Argv) < len(want) {
		return false
	}
	if !c.programIs(want[0]) {
		return false
	}
	for i := 1; i < len(want); i++ {
		if c.Argv[i] != want[i] {
			return false
		}
	}
	return true
}

func (c *Command) programIs(w string) bool {
	if strings.Contains(w, "/") {
		return c.Path == w
	}
	return c.Program == w
}

// globalValueOptions lists, per program, the options that come before a
// subcommand and take the next word as their value (git -c k=v push,
// git -C dir push, kubectl -n ns delete; aws: every global option that
// takes a value, as aws help lists them).
var globalValueOptions = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"git": longs("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
			"--exec-path", "--attr-source"),
		"docker": longs("-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "--tlscacert",
			"--tlscert", "--tlskey"),
		"podman": longs("--connection", "-c", "--url", "--root", "--runroot", "--log-level", "--storage-driver"),
		"kubectl": longs("-n", "--namespace", "--context", "--cluster", "--user", "--kubeconfig", "-s",
			"--server", "--token", "--as", "--as-group", "--as-uid", "--cache-dir", "--certificate-authority",
			"--client-certificate", "--client-key", "--request-timeout", "--tls-server-name", "-v", "-o", "-l",
			"--output", "--selector", "-f", "--filename"),
		"helm": longs("-n", "--namespace", "--kube-context", "--kubeconfig", "--registry-config",
			"--repository-config", "--repository-cache"),
		"npm":   longs("--prefix", "-w", "--workspace", "--registry", "--userconfig"),
		"pnpm":  longs("-C", "--dir", "--filter", "-F", "-w", "--workspace"),
		"yarn":  longs("--cwd"),
		"cargo": longs("--color", "--config", "-Z", "-C", "--manifest-path"),
		"go":    longs("-C"),
		"aws": longs("--profile", "--region", "--output", "--endpoint-url", "--query", "--cli-read-timeout",
			"--cli-connect-timeout", "--color", "--ca-bundle", "--cli-binary-format"),
		"gh":        longs("-R", "--repo", "--hostname"),
		"make":      longs("-C", "-f", "--file", "--directory", "-I", "-o", "-W", "--include-dir"),
		"systemctl": longs("-H", "--host", "-M", "--machine", "-t", "--type", "-p", "--property", "-s", "--signal"),
		"apt":       longs("-o", "-c", "-t"),
		"apt-get":   longs("-o", "-c", "-t"),
		"terraform": longs(),
		"pip":       longs("--index-url", "-i", "--extra-index-url", "--proxy", "--log", "-r", "--requirement"),
		"pip3":      longs("--index-url", "-i", "--extra-index-url", "--proxy", "--log", "-r", "--requirement"),
		"brew":      longs(),
		"svn":       longs("--username", "--password", "--config-dir"),
		"hg":        longs("-R", "--repository", "--cwd", "--config"),
	}
})

// leadingCommand is the option model of a program whose command is the
// words before its first option, as the program reads it, with the
// program-wide options that may come among those words.
type leadingCommand struct {
	// flags take no value; values take the next word unless written
	// --opt=value. Any other option ends the command's words: what
	// follows it is the command's own options, their values and its
	// arguments, never a group or a verb.
	flags, values map[string]bool
	// fold says the program reads its command's words in any case.
	fold bool
}

// leadingCommands are the programs whose command is their leading words.
// az (knack's invoker): the command is the words before the first one that
// starts with "-", compared in lower case (az group DELETE deletes); the
// options every command takes (--debug, --verbose, --only-show-errors,
// -h, and -o, --query, --subscription with a value) may come before or
// among them. gcloud: a command's flags come after the command; the
// gcloud-wide flags (gcloud topic flags) may come anywhere. So
// "az storage blob list --prefix delete" lists (delete is --prefix's
// value), and "az -o none group delete -n rg" deletes.
var leadingCommands = sync.OnceValue(func() map[string]leadingCommand {
	return map[string]leadingCommand{
		"az": {
			flags:  longs("--debug", "--verbose", "--only-show-errors", "-h", "--help"),
			values: longs("-o", "--output", "--query", "--subscription"),
			fold:   true,
		},
		"gcloud": {
			flags: longs("--quiet", "-q", "--help", "-h", "--log-http", "--no-log-http", "--user-output-enabled",
				"--no-user-output-enabled"),
			values: longs("--project", "--account", "--configuration", "--format", "--verbosity", "--billing-project",
				"--impersonate-service-account", "--access-token-file", "--flags-file", "--flatten", "--trace-token"),
		},
	}
})

// positionals are the command's words as m reads them (leadingCommands).
func (m leadingCommand) positionals(args []string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' {
			name, _, hasValue := strings.Cut(a, "=")
			switch {
			case m.flags[name] && !hasValue:
			case m.values[name]:
				if !hasValue {
					i++
				}
			case a[1] != '-' && m.values[a[:2]]:
				// -otable: a short option and its value in one word.
			default:
				return out
			}
			continue
		}
		if m.fold {
			a = strings.ToLower(a)
		}
		out = append(out, a)
	}
	return out
}

// Positionals returns the words after the program that are not options,
// skipping the values of the program's known global options (git -c k=v,
// git -C dir, kubectl -n ns, ...). Everything after "--" is positional.
// For a program whose command is its leading words (leadingCommands: az,
// gcloud), they are those words, az's in lower case, as it reads them.
func (c *Command) Positionals() []string {
	if m, ok := leadingCommands()[c.Program]; ok {
		return m.positionals(c.Args())
	}
	values := globalValueOptions()[c.Program]
	out := []string{}
	args := c.Args()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if len(a) > 1 && a[0] == '-' {
			if values[a] && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// Subcommand returns the first positional word (see Positionals): "push" for
// git -c k=v push origin, or "".
func (c *Command) Subcommand() string {
	p := c.Positionals()
	if len(p) == 0 {
		return ""
	}
	return p[0]
}

// HasSubcommand reports whether the command is "<program> <sub> [<sub>...]"
// with options allowed anywhere in between: "git push" matches
// git -c k=v push, git --git-dir=x push and git -C dir push -f;
// "kubectl delete pod" matches kubectl -n prod delete pod x.
func (c *Command) HasSubcommand(spec string) bool {
	// The spec's words are read in place (no allocation: a rule may test
	// a list of 25 specs against every command of every call).
	first, rest := nextField(spec)
	if first == "" || !c.programIs(first) {
		return false
	}
	pos := c.Positionals()
	for i := 0; ; i++ {
		var w string
		if w, rest = nextField(rest); w == "" {
			return true
		}
		if i >= len(pos) || pos[i] != w {
			return false
		}
	}
}

// nextField returns the first whitespace-separated word of s and the rest,
// as strings.Fields would split it; "" when there is none.
func nextField(s string) (word, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// Programs returns the program of every command, in order, with duplicates.
func (p *Line) Programs() []string {
	out := make([]string, 0, len(p.Commands))
	for _, c := range p.Commands {
		if c.Program != "" {
			out = append(out, c.Program)
		}
	}
	return out
}

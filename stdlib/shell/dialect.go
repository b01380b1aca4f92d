package shell

import (
	"regexp"
	"sync"
)

// What the shells run inside what reads as data (issue 15, point 3). The
// parser reads bash; these constructs run code in bash or zsh (the login
// shell of Claude Code and Codex on macOS) where the parse sees text, so a
// command holding one is opaque: it is decided as a command celguard
// cannot see.
// dialectHazards compile on first use: package init runs in every celguard
// process, hooks that decide nothing included.
var dialectHazards = sync.OnceValue(func() []dialectHazard {
	return []dialectHazard{
		// a[$(cmd)]: bash evaluates an array subscript, substitutions
		// included, in arithmetic, test -v, printf -v, declare, read, ...,
		// even when the text came from a quoted string or a variable.
		{regexp.MustCompile("[A-Za-z_][A-Za-z0-9_]*\\[[^\\]]*(\\$\\(|`|\\$\\{)"), "an array subscript may run a command (a[$(cmd)])"},
		// ${x@P} expands the value as a prompt string, substitutions included.
		{regexp.MustCompile(`\$\{[^}]*@P\}`), "a prompt expansion (${x@P}) runs the substitutions in the value"},
		// zsh glob qualifiers that run code: *(e:cmd:), *(e'cmd'), *(+func),
		// and explicit qualifiers (#q...) anywhere.
		{regexp.MustCompile(`([*?\]]\(|\(#q)[A-Za-z0-9.^/@=%\-]*(e[:'"]|\+[A-Za-z_])`), "a zsh glob qualifier may run code (*(e:cmd:), *(+func))"},
		// bash's /dev/tcp and /dev/udp open network connections.
		{regexp.MustCompile(`/dev/(tcp|udp)/`), "/dev/tcp or /dev/udp opens a network connection"},
	}
})

type dialectHazard struct {
	re     *regexp.Regexp
	reason string
}

// addDialectHazards marks the line opaque for each construct of
// dialectHazards in cmd (at most MaxInput bytes are scanned, in linear
// time).
func (l *Line) addDialectHazards(cmd string) {
	if len(cmd) > MaxInput {
		cmd = cmd[:MaxInput]
	}
	for _, h := range dialectHazards() {
		if h.re.MatchString(cmd) {
			l.Opaque = true
			l.OpaqueReasons = append(l.OpaqueReasons, h.reason)
		}
	}
}

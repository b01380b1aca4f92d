package shell

import (
	"regexp"
	"strings"
	"sync"
)

// What the shells run inside what reads as data (issue 15, point 3). The
// parser reads bash; these constructs run code in bash or zsh (the login
// shell of Claude Code and Codex on macOS) where the parse sees text, so a
// command holding one is opaque: it is decided as a command celguard
// cannot see.
// dialectHazards compile on first use: package init runs in every celguard
// process, hooks that decide nothing included.
//
// Each comes with literals every match holds, in order (first, then after
// it then): a line without them cannot match, and is not searched. Most
// lines lack them, and Go's regexp has no literal to skip to in the first
// and third patterns, so it tried every offset of the line: on a 2 KB
// command the four searches cost 2.2M instructions, half of a decision
// with the recommended bundle. TestDialectHazardLiterals holds each
// pattern's literals to its syntax tree, and FuzzDialectHazardLiterals to
// regexp's answers.
var dialectHazards = sync.OnceValue(func() []dialectHazard {
	return []dialectHazard{
		// a[$(cmd)]: bash evaluates an array subscript, substitutions
		// included, in arithmetic, test -v, printf -v, declare, read, ...,
		// even when the text came from a quoted string or a variable.
		{regexp.MustCompile("[A-Za-z_][A-Za-z0-9_]*\\[[^\\]]*(\\$\\(|`|\\$\\{)"),
			[]string{"["}, []string{"$(", "`", "${"},
			"an array subscript may run a command (a[$(cmd)])"},
		// ${x@P} expands the value as a prompt string, substitutions included.
		{regexp.MustCompile(`\$\{[^}]*@P\}`),
			[]string{"${"}, []string{"@P}"},
			"a prompt expansion (${x@P}) runs the substitutions in the value"},
		// zsh glob qualifiers that run code: *(e:cmd:), *(e'cmd'), *(+func),
		// and explicit qualifiers (#q...) anywhere.
		{regexp.MustCompile(`([*?\]]\(|\(#q)[A-Za-z0-9.^/@=%\-]*(e[:'"]|\+[A-Za-z_])`),
			[]string{"*(", "?(", "](", "(#q"}, []string{"e:", "e'", `e"`, "+"},
			"a zsh glob qualifier may run code (*(e:cmd:), *(+func))"},
		// bash's /dev/tcp and /dev/udp open network connections.
		{regexp.MustCompile(`/dev/(tcp|udp)/`),
			[]string{"/dev/tcp/", "/dev/udp/"}, nil,
			"/dev/tcp or /dev/udp opens a network connection"},
	}
})

type dialectHazard struct {
	re *regexp.Regexp
	// first and then: every match of re holds one of first and, after
	// it, one of then (nil: nothing more is required).
	first, then []string
	reason      string
}

// mayMatch reports whether s holds one of h.first and, after it, one of
// h.then: false only when re cannot match s. The earliest end of a first
// literal is the one to search after: any later one leaves less of s.
func (h dialectHazard) mayMatch(s string) bool {
	end := -1
	for _, lit := range h.first {
		limit := len(s)
		if end >= 0 {
			limit = end - 1 // only an occurrence ending earlier helps
		}
		if limit < len(lit) {
			continue
		}
		if i := strings.Index(s[:limit], lit); i >= 0 {
			end = i + len(lit)
		}
	}
	if end < 0 {
		return false
	}
	if len(h.then) == 0 {
		return true
	}
	for _, lit := range h.then {
		if strings.Contains(s[end:], lit) {
			return true
		}
	}
	return false
}

// addDialectHazards marks the line opaque for each construct of
// dialectHazards in cmd (at most MaxInput bytes are scanned, in linear
// time).
func (l *Line) addDialectHazards(cmd string) {
	if len(cmd) > MaxInput {
		cmd = cmd[:MaxInput]
	}
	for _, h := range dialectHazards() {
		if h.mayMatch(cmd) && h.re.MatchString(cmd) {
			l.Opaque = true
			l.OpaqueReasons = append(l.OpaqueReasons, h.reason)
		}
	}
}

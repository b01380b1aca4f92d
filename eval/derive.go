package eval

import (
	"strings"

	"github.com/celguard/celguard/stdlib/shell"
)

// derivedArgs are the class-driven views of the arguments.
type derivedArgs struct {
	command string
	paths   []string
	// work counts the steps of the path de-duplication (comparisons and set
	// operations), so a test can pin that it stays linear in the number of
	// paths.
	work int
}

// derive reads the command and the paths from the arguments the tool's
// classes name. A list of strings under a path argument contributes each.
func (ev *evaluation) derive() *derivedArgs {
	if ev.derived != nil {
		return ev.derived
	}
	d := &derivedArgs{paths: []string{}}
	var seen map[string]struct{}
	add := func(p string) { d.paths, seen = d.appendUnique(d.paths, seen, p) }
	found := false
	for _, name := range ev.toolClasses() {
		cl, ok := ev.set.Class(name)
		if !ok {
			continue
		}
		commandArgs, pathArgs := ev.classArgs(cl)
		for _, a := range commandArgs {
			if found {
				break
			}
			switch v := ev.call.Args[a].(type) {
			case string:
				d.command, found = v, true
			case []any: // an argv array, as Codex's shell tool sends
				if cmd, ok := joinArgv(v); ok {
					d.command, found = cmd, true
				}
			}
		}
		for _, a := range pathArgs {
			switch v := ev.call.Args[a].(type) {
			case string:
				add(v)
			case []any:
				for _, x := range v {
					if s, ok := x.(string); ok {
						add(s)
					}
				}
			}
		}
	}
	ev.derived = d
	return d
}

// joinArgv turns an argv array into one command line, quoting each word for
// the shell (shell.Quote) so that the shell parser sees the same words.
func joinArgv(argv []any) (string, bool) {
	words := make([]string, 0, len(argv))
	for _, x := range argv {
		s, ok := x.(string)
		if !ok {
			return "", false
		}
		words = append(words, shell.Quote(s))
	}
	return strings.Join(words, " "), true
}

// smallPathList is the length up to which appendUnique scans the list; past
// it, it keeps a set, so de-duplicating n paths is O(n) (a list of 3×10^5
// paths scanned pairwise took minutes, past every host's hook deadline).
const smallPathList = 16

// appendUnique appends s to l unless it is there already, in first-seen
// order. seen is nil while l is short and is built once l grows past
// smallPathList; the (possibly new) set is returned with the list.
func (d *derivedArgs) appendUnique(l []string, seen map[string]struct{}, s string) ([]string, map[string]struct{}) {
	if seen == nil {
		for _, x := range l {
			d.work++
			if x == s {
				return l, nil
			}
		}
		l = append(l, s)
		if len(l) <= smallPathList {
			return l, nil
		}
		seen = make(map[string]struct{}, 2*len(l))
		for _, x := range l {
			d.work++
			seen[x] = struct{}{}
		}
		return l, seen
	}
	d.work++
	if _, dup := seen[s]; dup {
		return l, seen
	}
	seen[s] = struct{}{}
	return append(l, s), seen
}

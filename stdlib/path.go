package stdlib

import (
	"os"
	"os/user"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Path returns the path library (celguard.lib.path): slash-separated paths
// made comparable, so rules are not bypassed with ../, ~, //, ./, case or
// Windows tricks. All functions are lexical except path.abs with
// WithSymlinks(true).
//
// # path.clean
//
// Cleans a path lexically: collapses "//", "." and "..".
//
//	path.clean(<string>) -> <string>
//
// Examples:
//
//	path.clean("a//b/./../c") // "a/c"
//	path.clean("/../etc")     // "/etc"
//
// Introduced in stdlib version 1.
//
// # path.expand
//
// Expands a leading "~", "$HOME" or "${HOME}" to the configured home (see
// WithHome), and "~user" to that user's home directory as the shell does
// (from the user database; a user it does not know stays as written).
//
//	path.expand(<string>) -> <string>
//
// Examples:
//
//	path.expand("~/.ssh/id_rsa") // "/home/me/.ssh/id_rsa" with home /home/me
//
// Introduced in stdlib version 1.
//
// # path.abs
//
// Makes a path absolute against a working directory: expands "~", joins a
// relative path to cwd (itself expanded; "/" when empty) and cleans. With
// WithSymlinks(true) it also resolves symbolic links on disk, including
// dangling ones, component by component.
//
//	path.abs(<string>, <string>) -> <string>
//
// Examples:
//
//	path.abs("../secret", "/srv/app") // "/srv/secret"
//	path.abs("~/.aws", "/tmp")         // "/home/me/.aws"
//
// Introduced in stdlib version 1.
//
// # path.normal
//
// The normal form for comparisons: expands "~", turns "\" into "/", strips
// the Windows tricks that name the same file (trailing dots and spaces of a
// component, an NTFS stream suffix such as "::$DATA"), cleans and, with true,
// folds case.
//
//	path.normal(<string>) -> <string>
//	path.normal(<string>, <bool>) -> <string>
//
// Examples:
//
//	path.normal("./x/.env. ")         // "x/.env"
//	path.normal(".env::$DATA")        // ".env"
//	path.normal("Config/.ENV", true)  // "config/.env"
//
// Introduced in stdlib version 1.
//
// # path.within
//
// Reports whether a path is the directory or inside it, after path.normal of
// both (case-folded with true). A relative dir "." contains every relative
// path that does not climb out with "..".
//
//	path.within(<string>, <string>) -> <bool>
//	path.within(<string>, <string>, <bool>) -> <bool>
//
// Examples:
//
//	path.within("/srv/app/src/x.go", "/srv/app") // true
//	path.within("/srv/app2", "/srv/app")         // false
//	path.within("/Srv/App/x", "/srv/app", true)  // true
//
// Introduced in stdlib version 1.
//
// # path.base
//
// The last element of the cleaned path.
//
//	path.base(<string>) -> <string>
//
// Examples:
//
//	path.base("/a/b/.env") // ".env"
//
// Introduced in stdlib version 1.
//
// # path.dir
//
// All but the last element of the cleaned path.
//
//	path.dir(<string>) -> <string>
//
// Examples:
//
//	path.dir("/a/b/c.txt") // "/a/b"
//
// Introduced in stdlib version 1.
//
// # path.ext
//
// The extension of the base name, from its last dot. A name whose only dot
// is the leading one has none.
//
//	path.ext(<string>) -> <string>
//
// Examples:
//
//	path.ext("key.pem")      // ".pem"
//	path.ext(".env")         // ""
//	path.ext(".env.local")   // ".local"
//
// Introduced in stdlib version 1.
//
// # path.isAbs
//
// Reports whether the path is absolute.
//
//	path.isAbs(<string>) -> <bool>
//
// Examples:
//
//	path.isAbs("/etc") // true
//
// Introduced in stdlib version 1.
//
// # path.join
//
// Joins two paths and cleans the result.
//
//	path.join(<string>, <string>) -> <string>
//
// Examples:
//
//	path.join("/a", "../b") // "/b"
//
// Introduced in stdlib version 1.
//
// # path.segments
//
// The elements of the cleaned path, without the root.
//
//	path.segments(<string>) -> <list(string)>
//
// Examples:
//
//	path.segments("/a/.git/config") // ["a", ".git", "config"]
//	".git" in path.segments(path.normal("x/.GIT./HEAD", true)) // true
//
// Introduced in stdlib version 1.
func (l *Lib) Path() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "path"})
}

func (l *Lib) pathFns() []*fnDef {
	s := []*cel.Type{cel.StringType}
	ss := []*cel.Type{cel.StringType, cel.StringType}
	// Result sizes: cleaning never lengthens a path except "" -> "."; the
	// home directory (H code points) replaces at most one leading ~.
	home := uint64(utf8.RuneCountInString(l.cfg.home))
	unaryCost := linearCost(1, 0, 0.2).withSize(firstArgSize(1))
	unary := func(name, id string, f func(string) string) *fnDef {
		return &fnDef{ns: "path", name: name, version: 1, ovs: []*ovDef{{
			id: id, args: s, result: cel.StringType, cost: unaryCost,
			unary: strFn(f),
		}}}
	}
	absCost := linearCost(2, 0, 0.2)
	absCost.arg2, absCost.perUnit2 = 1, 0.2
	if l.cfg.symlinks {
		// A symlink's target can be any length: no size bound.
		absCost.base = 200
		absCost.perUnit = 20
	} else {
		absCost = absCost.withSize(sumSize(2*home + 2))
	}
	pairCost := linearCost(2, 0, 0.3)
	pairCost.arg2, pairCost.perUnit2 = 1, 0.3
	expand := &fnDef{ns: "path", name: "path.expand", version: 1, ovs: []*ovDef{{
		id: "path_expand_string", args: s, result: cel.StringType,
		cost: linearCost(1, 0, 0.2).withSize(firstArgSize(home + 1)), unary: strFn(l.expandHome),
	}}}
	return []*fnDef{
		unary("path.clean", "path_clean_string", cleanPath),
		expand,
		{ns: "path", name: "path.abs", version: 1, ovs: []*ovDef{{
			id: "path_abs_string_string", args: ss, result: cel.StringType, cost: absCost,
			binary: func(p, cwd ref.Val) ref.Val {
				a, b, err := twoStrings(p, cwd)
				if err != nil {
					return err
				}
				return types.String(l.abs(a, b))
			},
		}}},
		{ns: "path", name: "path.normal", version: 1, ovs: []*ovDef{
			{id: "path_normal_string", args: s, result: cel.StringType, cost: linearCost(2, 0, 0.3).withSize(firstArgSize(home + 1)),
				unary: strFn(func(p string) string { return l.normal(p, false) })},
			{id: "path_normal_string_bool", args: []*cel.Type{cel.StringType, cel.BoolType}, result: cel.StringType,
				cost: linearCost(2, 0, 0.4).withSize(firstArgSize(home + 1)), binary: func(p, fold ref.Val) ref.Val {
					ps, ok := p.(types.String)
					fb, ok2 := fold.(types.Bool)
					if !ok || !ok2 {
						return types.MaybeNoSuchOverloadErr(p)
					}
					return types.String(l.normal(string(ps), bool(fb)))
				}},
		}},
		{ns: "path", name: "path.within", version: 1, ovs: []*ovDef{
			{id: "path_within_string_string", args: ss, result: cel.BoolType, cost: pairCost,
				binary: func(p, d ref.Val) ref.Val {
					a, b, err := twoStrings(p, d)
					if err != nil {
						return err
					}
					return types.Bool(l.within(a, b, false))
				}},
			{id: "path_within_string_string_bool", args: []*cel.Type{cel.StringType, cel.StringType, cel.BoolType},
				result: cel.BoolType, cost: pairCost, fn: func(args ...ref.Val) ref.Val {
					if len(args) != 3 {
						return types.NewErr("path.within: expected 3 arguments")
					}
					a, b, err := twoStrings(args[0], args[1])
					if err != nil {
						return err
					}
					fb, ok := args[2].(types.Bool)
					if !ok {
						return types.MaybeNoSuchOverloadErr(args[2])
					}
					return types.Bool(l.within(a, b, bool(fb)))
				}},
		}},
		unary("path.base", "path_base_string", func(p string) string { return path.Base(p) }),
		unary("path.dir", "path_dir_string", func(p string) string { return path.Dir(p) }),
		unary("path.ext", "path_ext_string", extOf),
		{ns: "path", name: "path.isAbs", version: 1, ovs: []*ovDef{{
			id: "path_isAbs_string", args: s, result: cel.BoolType, cost: fixedCost(1),
			unary: func(p ref.Val) ref.Val {
				ps, ok := p.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(p)
				}
				return types.Bool(path.IsAbs(string(ps)))
			},
		}}},
		{ns: "path", name: "path.join", version: 1, ovs: []*ovDef{{
			id: "path_join_string_string", args: ss, result: cel.StringType, cost: pairCost.withSize(sumSize(2)),
			binary: func(p, q ref.Val) ref.Val {
				a, b, err := twoStrings(p, q)
				if err != nil {
					return err
				}
				return types.String(path.Join(a, b))
			},
		}}},
		{ns: "path", name: "path.segments", version: 1, ovs: []*ovDef{{
			id: "path_segments_string", args: s, result: listString,
			cost: linearCost(2, 0, 0.3).withSize(func(args []cost.SizeEstimate) cost.SizeEstimate {
				n := args[0].Max
				elem := cost.RangedSizeEstimate(0, n)
				out := cost.RangedSizeEstimate(0, n/2+1) // segments are separated by "/"
				out.Elem = &elem
				return out
			}),
			unary: func(p ref.Val) ref.Val {
				ps, ok := p.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(p)
				}
				return types.NewStringList(adapter, segments(string(ps)))
			},
		}}},
	}
}

func strFn(f func(string) string) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		s, ok := v.(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return types.String(f(string(s)))
	}
}

func twoStrings(a, b ref.Val) (string, string, ref.Val) {
	as, ok := a.(types.String)
	if !ok {
		return "", "", types.MaybeNoSuchOverloadErr(a)
	}
	bs, ok := b.(types.String)
	if !ok {
		return "", "", types.MaybeNoSuchOverloadErr(b)
	}
	return string(as), string(bs), nil
}

func cleanPath(p string) string { return path.Clean(p) }

// expandHome expands a leading ~, $HOME or ${HOME}.
func (l *Lib) expandHome(p string) string {
	for _, pre := range []string{"~", "${HOME}", "$HOME"} {
		if p == pre {
			return l.cfg.home
		}
		if strings.HasPrefix(p, pre+"/") {
			return path.Join(l.cfg.home, p[len(pre)+1:])
		}
	}
	if strings.HasPrefix(p, "~") {
		return l.expandUser(p)
	}
	return p
}

// expandUser expands a leading ~user as the shell does: to the home
// directory the user database (/etc/passwd, or the system's) gives the
// user; a name it does not know stays as written, as in bash. A home
// longer than the configured one by more than the "~user" it replaces is
// left unexpanded, so path.expand and path.abs keep the size bound their
// cost model declares.
func (l *Lib) expandUser(p string) string {
	name, rest, _ := strings.Cut(p[1:], "/")
	if name == "" || !validUserName(name) {
		return p
	}
	home, ok := userHome(name)
	if !ok || len(home) > len(l.cfg.home)+1+len(name) {
		return p
	}
	if rest == "" {
		return home
	}
	return path.Join(home, rest)
}

// validUserName reports whether s may be a user name (POSIX portable
// characters): ~+, ~- and ~$X are not user names.
func validUserName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' ||
			c == '-' && i > 0) {
			return false
		}
	}
	return len(s) <= 64
}

// userHomes caches the user database's answers (a name to its home, ""
// for a name it does not know).
var userHomes sync.Map

// userHome returns the home directory of the named user, read from the
// user database once per name.
func userHome(name string) (string, bool) {
	if v, ok := userHomes.Load(name); ok {
		h := v.(string)
		return h, h != ""
	}
	h := ""
	if u, err := user.Lookup(name); err == nil && path.IsAbs(u.HomeDir) {
		h = path.Clean(u.HomeDir)
	}
	userHomes.Store(name, h)
	return h, h != ""
}

// abs makes p absolute against cwd (see path.abs).
func (l *Lib) abs(p, cwd string) string {
	p = l.expandHome(p)
	if !path.IsAbs(p) {
		c := l.expandHome(cwd)
		if !path.IsAbs(c) {
			c = "/" + c
		}
		p = c + "/" + p
	}
	if l.cfg.symlinks {
		return resolveSymlinks(p)
	}
	return path.Clean(p)
}

// perProcess reports whether p is a link whose target depends on the
// process that follows it (/proc/self, /proc/thread-self, /proc/PID/cwd
// and the other links under /proc, /dev/fd, /dev/stdin ...): resolving it
// in celguard would name celguard's own process, not the agent's.
func perProcess(p string) bool {
	switch p {
	case "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(p, "/proc/")
}

// maxSymlinkHops bounds link chains (the Linux limit is 40).
const maxSymlinkHops = 40

// resolveSymlinks resolves an absolute path component by component, like the
// kernel: ".." applies to the resolved prefix. A component that does not
// exist ends the disk walk; the rest is appended lexically. A dangling link's
// target is followed lexically.
func resolveSymlinks(p string) string {
	queue := strings.Split(p, "/")
	resolved := "/"
	hops := 0
	for len(queue) > 0 {
		comp := queue[0]
		queue = queue[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, comp)
		if perProcess(next) {
			// /proc/self is the process that reads it: celguard here, the
			// agent's tool when it runs. It and what is under it stay as
			// written.
			return path.Clean(next + "/" + strings.Join(queue, "/"))
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return path.Clean(next + "/" + strings.Join(queue, "/"))
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		hops++
		target, err := os.Readlink(next)
		if err != nil || hops > maxSymlinkHops {
			return path.Clean(next + "/" + strings.Join(queue, "/"))
		}
		if path.IsAbs(target) {
			resolved = "/"
		}
		queue = append(strings.Split(target, "/"), queue...)
	}
	return resolved
}

// normal is the comparison form (see path.normal).
func (l *Lib) normal(p string, fold bool) string {
	p = strings.ReplaceAll(p, `\`, "/")
	p = l.expandHome(p)
	if strings.ContainsAny(p, ". :") {
		parts := strings.Split(p, "/")
		for i, c := range parts {
			parts[i] = stripWindowsTricks(c)
		}
		p = strings.Join(parts, "/")
	}
	p = path.Clean(p)
	if fold {
		p = strings.ToLower(p)
	}
	return p
}

// stripWindowsTricks removes what Windows ignores in a path component: an
// NTFS data-stream suffix (name::$DATA, name:stream:$DATA) and trailing dots
// and spaces. "." and ".." are kept.
func stripWindowsTricks(c string) string {
	if c == "." || c == ".." || c == "" {
		return c
	}
	if strings.HasSuffix(strings.ToLower(c), ":$data") {
		if i := strings.IndexByte(c, ':'); i > 0 {
			c = c[:i]
		}
	}
	t := strings.TrimRight(c, ". ")
	if t == "" {
		return c
	}
	return t
}

// within reports whether p is d or inside it, after normal().
func (l *Lib) within(p, d string, fold bool) bool {
	np, nd := l.normal(p, fold), l.normal(d, fold)
	switch {
	case nd == "/":
		return path.IsAbs(np)
	case nd == ".":
		return !path.IsAbs(np) && np != ".." && !strings.HasPrefix(np, "../")
	}
	return np == nd || strings.HasPrefix(np, nd+"/")
}

func extOf(p string) string {
	b := path.Base(p)
	i := strings.LastIndexByte(b, '.')
	if i <= 0 || strings.Trim(b[:i], ".") == "" {
		return ""
	}
	return b[i:]
}

func segments(p string) []string {
	out := []string{}
	for _, s := range strings.Split(path.Clean(p), "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}

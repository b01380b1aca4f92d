package stdlib

import (
	"fmt"
	"path"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"github.com/bmatcuk/doublestar/v4"
)

// Glob returns the glob library (celguard.lib.glob): doublestar patterns
// ("**" crosses "/"; also *, ?, [class], {a,b}). Literal patterns are checked
// when the policy compiles; a bad pattern reaching a call at runtime is an
// error value.
//
// # glob.match
//
// Reports whether a slash-separated path matches the pattern as a whole.
//
//	glob.match(<string>, <string>) -> <bool>
//
// Examples:
//
//	glob.match("src/a/b.go", "src/**/*.go") // true
//	glob.match("README.md", "*.go")         // false
//	glob.match("/home/u/.ssh/id_rsa", "**/.ssh/**") // true
//
// Introduced in stdlib version 1.
//
// # glob.matchAny
//
// Reports whether the path matches any of the patterns.
//
//	glob.matchAny(<string>, <list(string)>) -> <bool>
//
// Examples:
//
//	glob.matchAny("a/.env", ["**/.env", "**/.env.*"]) // true
//
// Introduced in stdlib version 1.
//
// # glob.matchName
//
// Reports whether the base name of the path matches the pattern ("*" does
// not cross "/", so the pattern names a file at any depth).
//
//	glob.matchName(<string>, <string>) -> <bool>
//
// Examples:
//
//	glob.matchName("/deep/dir/server.pem", "*.pem") // true
//	glob.matchName("x/.env.example", ".env")        // false
//
// Introduced in stdlib version 1.
//
// # glob.valid
//
// Reports whether a pattern is well formed (for patterns that arrive at
// runtime).
//
//	glob.valid(<string>) -> <bool>
//
// Examples:
//
//	glob.valid("src/[a") // false
//
// Introduced in stdlib version 1.
func (l *Lib) Glob() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "glob"})
}

func validateGlob(p string) error {
	if !doublestar.ValidatePattern(p) {
		return fmt.Errorf("invalid glob pattern %q", p)
	}
	return nil
}

func (l *Lib) globFns() []*fnDef {
	ss := []*cel.Type{cel.StringType, cel.StringType}
	matchCost := linearCost(2, 0, 0.3)
	matchCost.arg2, matchCost.perUnit2 = 1, 0.3
	anyCost := linearCost(2, 1, 20)
	return []*fnDef{
		{ns: "glob", name: "glob.match", version: 1, ovs: []*ovDef{{
			id: "glob_match_string_string", args: ss, result: cel.BoolType, cost: matchCost,
			binary: func(p, pat ref.Val) ref.Val { return globMatch(p, pat, false) },
		}}},
		{ns: "glob", name: "glob.matchAny", version: 1, ovs: []*ovDef{{
			id: "glob_matchAny_string_list", args: []*cel.Type{cel.StringType, listString}, result: cel.BoolType,
			cost: anyCost,
			binary: func(p, pats ref.Val) ref.Val {
				list, ok := pats.(traits.Lister)
				if !ok {
					return types.MaybeNoSuchOverloadErr(pats)
				}
				n, _ := list.Size().(types.Int)
				for i := types.Int(0); i < n; i++ {
					r := globMatch(p, list.Get(i), false)
					if r != types.False {
						return r
					}
				}
				return types.False
			},
		}}},
		{ns: "glob", name: "glob.matchName", version: 1, ovs: []*ovDef{{
			id: "glob_matchName_string_string", args: ss, result: cel.BoolType, cost: matchCost,
			binary: func(p, pat ref.Val) ref.Val { return globMatch(p, pat, true) },
		}}},
		{ns: "glob", name: "glob.valid", version: 1, ovs: []*ovDef{{
			id: "glob_valid_string", args: []*cel.Type{cel.StringType}, result: cel.BoolType, cost: linearCost(1, 0, 0.1),
			unary: func(pat ref.Val) ref.Val {
				s, ok := pat.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(pat)
				}
				return types.Bool(doublestar.ValidatePattern(string(s)))
			},
		}}},
	}
}

func globMatch(p, pat ref.Val, name bool) ref.Val {
	ps, pats, err := twoStrings(p, pat)
	if err != nil {
		return err
	}
	if name {
		ps = path.Base(ps)
	}
	g := compiledGlob(pats)
	if !g.valid {
		return types.NewErr("glob: invalid pattern %q", pats)
	}
	return types.Bool(g.match(pats, ps))
}

package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/celguard/celguard/policy"
)

// GuardBases are the directories whose guards/ BitCode reads, in its order
// of precedence (a later one's guard replaces an earlier one's of the same
// id), in the home directory and then in the project.
var GuardBases = []string{".agents", ".claude", ".bitcode"}

// GuardDirs returns the three guard directories under root, in precedence
// order.
func GuardDirs(root string) []string {
	out := make([]string, len(GuardBases))
	for i, b := range GuardBases {
		out[i] = filepath.Join(root, b, "guards")
	}
	return out
}

// IsGuardFile reports whether a path names a file BitCode reads as a
// guard: a .yaml, .yml or .md file directly in a guards directory of
// .agents, .claude or .bitcode.
func IsGuardFile(p string) bool {
	p = filepath.ToSlash(p)
	switch path.Ext(p) {
	case ".yaml", ".yml", ".md":
	default:
		return false
	}
	return IsGuardDir(path.Dir(p))
}

// IsGuardDir reports whether a path names a guards directory of .agents,
// .claude or .bitcode.
func IsGuardDir(p string) bool {
	p = path.Clean(filepath.ToSlash(p))
	return path.Base(p) == "guards" && slices.Contains(GuardBases, path.Base(path.Dir(p)))
}

// ReadGuardDir reads the guard files of one directory in fsys as BitCode
// does (os.ReadDir order: by name; .yaml, .yml and .md files, not
// subdirectories), named by prefix joined with their name. A directory that
// does not exist has none.
func ReadGuardDir(fsys fs.FS, dir, prefix string) ([]File, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		if errorsIsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out []File
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch path.Ext(e.Name()) {
		case ".yaml", ".yml", ".md":
		default:
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(b) > MaxFileSize {
			return nil, fmt.Errorf("%s: the file is larger than %d bytes", path.Join(prefix, e.Name()), MaxFileSize)
		}
		out = append(out, File{Name: path.Join(prefix, e.Name()), Data: b})
	}
	return out, nil
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// GuardSources reads BitCode guard files natively: one celguard policy
// source per guard that remains after later files replaced earlier ones of
// the same id, named by the guard's file, in which every rule sits on the
// line of the pattern it comes from (so a decision's file:line is the
// guard's). The policy is named "guard:ID", so a guard of a higher layer
// replaces one of the same id in a lower layer as BitCode's project guards
// replace the home directory's (only once the project is trusted:
// docs/layers.md). The error is a policy.Diagnostics at the guard files'
// positions; the notes are the warnings and infos.
func GuardSources(files []File) ([]policy.Source, policy.Diagnostics, error) {
	guards, ds := parseGuards(files)
	ds.Sort()
	if ds.HasErrors() {
		return nil, nil, ds
	}
	var out []policy.Source
	n := 0
	for _, g := range guards {
		rules, rds := g.rules()
		ds = append(ds, rds...)
		if n += len(rules); n > MaxRules {
			return nil, nil, policy.Diagnostics{diag(CodeUnsupported, policy.SeverityError, g.pos, "more than %d guard patterns in one layer", MaxRules)}
		}
		out = append(out, policy.Source{Name: g.file, Data: alignedPolicy(g, rules)})
	}
	ds.Sort()
	return out, ds, nil
}

// alignedPolicy writes a guard's policy in YAML flow style, each rule on the
// line of its pattern in the guard file.
func alignedPolicy(g *guard, rules []rule) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "{apiVersion: %s, kind: Policy, name: %s, description: %s, variables: [", q(policy.APIVersion), q("guard:"+sanitizeID(g.id)),
		q("BitCode guard "+g.id+", read natively from "+g.file))
	for i, v := range usedVariables(bitcodeVariables, rules) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{name: %s, expression: %s}", v.name, q(v.expr))
	}
	b.WriteString("], rules: [")
	line := 1
	for i, r := range rules {
		for line < r.src.Line {
			b.WriteString("\n")
			line++
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id: %s, priority: %d, match: {tools: %s}, condition: %s, verdict: %s, reason: %s, code: %s}",
			q(r.id), r.priority, qlist(r.tools), q(r.condition), r.verdict, q(r.reason), q(r.code))
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

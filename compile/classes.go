package compile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/policy"
)

// Class is a tool class merged from every ToolClasses file of the set.
type Class struct {
	Name string
	// Tools are the exact names and globs of the class, in file order.
	Tools []string
	// CommandArgs are the arguments that carry a shell command, tried in
	// order.
	CommandArgs []string
	// PathArgs are the arguments that carry file paths.
	PathArgs []string
	// ShapeArgs and ShapeNames put a tool no class with arguments names into
	// the class by its arguments (ClassesFor).
	ShapeArgs  []string
	ShapeNames []string
}

// classTable resolves tool names to their classes.
type classTable struct {
	byName map[string]*Class
	order  []*Class
	// exact maps a tool name to the classes that name it exactly.
	exact map[string][]string
	// globs are the class patterns that are not exact names.
	globs []classGlob
}

type classGlob struct {
	pattern, class string
}

func newClassTable() *classTable {
	return &classTable{byName: map[string]*Class{}, exact: map[string][]string{}}
}

// add merges one ToolClasses file into the table.
func (t *classTable) add(tc *policy.ToolClasses) {
	for _, c := range tc.Classes {
		if c.Name.Value == "" {
			continue
		}
		cl, ok := t.byName[c.Name.Value]
		if !ok {
			cl = &Class{Name: c.Name.Value}
			t.byName[cl.Name] = cl
			t.order = append(t.order, cl)
		}
		for _, tool := range c.Tools {
			if slices.Contains(cl.Tools, tool.Value) {
				continue
			}
			cl.Tools = append(cl.Tools, tool.Value)
			if isGlob(tool.Value) {
				t.globs = append(t.globs, classGlob{pattern: tool.Value, class: cl.Name})
			} else if !slices.Contains(t.exact[tool.Value], cl.Name) {
				t.exact[tool.Value] = append(t.exact[tool.Value], cl.Name)
			}
		}
		for _, a := range c.CommandArgs {
			if !slices.Contains(cl.CommandArgs, a.Value) {
				cl.CommandArgs = append(cl.CommandArgs, a.Value)
			}
		}
		for _, a := range c.PathArgs {
			if !slices.Contains(cl.PathArgs, a.Value) {
				cl.PathArgs = append(cl.PathArgs, a.Value)
			}
		}
		for _, a := range c.ShapeArgs {
			if !slices.Contains(cl.ShapeArgs, a.Value) {
				cl.ShapeArgs = append(cl.ShapeArgs, a.Value)
			}
		}
		for _, a := range c.ShapeNames {
			n := strings.ToLower(a.Value)
			if !slices.Contains(cl.ShapeNames, n) {
				cl.ShapeNames = append(cl.ShapeNames, n)
			}
		}
	}
}

// argKind is what a class reads from a call's arguments.
func (c *Class) argKind() string {
	switch {
	case len(c.CommandArgs) > 0:
		return "command"
	case len(c.PathArgs) > 0:
		return "paths"
	}
	return ""
}

// classesFor returns the classes of a tool called with args: its classes by
// name and, when none of those reads arguments (an MCP tool, a tool no
// class names), the classes it fits by shape (Class.ShapeArgs): at most one
// per kind of argument (command, paths, other), the first in declaration
// order. shaped reports whether any was added.
func (t *classTable) classesFor(tool string, args map[string]any) (classes []string, shaped bool) {
	named := t.classesOf(tool)
	for _, n := range named {
		if cl := t.byName[n]; cl != nil && cl.argKind() != "" {
			return named, false
		}
	}
	lower := ""
	var kinds []string
	for _, cl := range t.order {
		if len(cl.ShapeArgs) == 0 || slices.Contains(named, cl.Name) || slices.Contains(kinds, cl.argKind()) {
			continue
		}
		paths := cl.argKind() == "paths"
		if !slices.ContainsFunc(cl.ShapeArgs, func(a string) bool { return shapedArg(args[a], paths && !strings.Contains(a, "path")) }) &&
			!(paths && slices.ContainsFunc(sortedKeys(args), func(k string) bool { return pathKey(k) && shapedArg(args[k], false) })) {
			continue
		}
		if len(cl.ShapeNames) > 0 {
			if lower == "" {
				lower = strings.ToLower(tool)
			}
			if !slices.ContainsFunc(cl.ShapeNames, func(n string) bool { return strings.Contains(lower, n) }) {
				continue
			}
		}
		if !shaped {
			classes = append(make([]string, 0, len(named)+2), named...)
			shaped = true
		}
		classes = append(classes, cl.Name)
		kinds = append(kinds, cl.argKind())
	}
	if !shaped {
		return named, false
	}
	return classes, true
}

// ShapeKey reports whether a call's argument k is one the class reads when
// a tool joins it by shape: one of its ShapeArgs, or, for a class of paths,
// a name that says it holds a path (output_path, config_file).
func (c *Class) ShapeKey(k string) bool {
	return slices.Contains(c.ShapeArgs, k) || c.argKind() == "paths" && pathKey(k)
}

// pathKey reports whether an argument's name says it holds a path
// (output_path, config_file, target_dir, source_filename), for the path
// classes' shapes beyond the names they list.
func pathKey(k string) bool {
	k = strings.ToLower(k)
	for _, suffix := range []string{"path", "_file", "file_name", "filename", "_dir", "_directory", "_paths", "_files"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// sortedKeys returns the keys of m in order, so the shape of a call does
// not depend on map order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// shapedArg reports whether v is a non-empty string or a list holding one;
// with pathLike, one that looks like a path (it holds a /, a \, a . or a
// ~): an argument named target or source may hold "production".
func shapedArg(v any, pathLike bool) bool {
	ok := func(s string) bool { return s != "" && (!pathLike || strings.ContainsAny(s, "/\\.~")) }
	switch x := v.(type) {
	case string:
		return ok(x)
	case []any:
		return slices.ContainsFunc(x, func(e any) bool { s, isStr := e.(string); return isStr && ok(s) })
	}
	return false
}

// classesOf returns the classes of a tool, exact names first, then globs, in
// declaration order. The result must not be modified.
func (t *classTable) classesOf(tool string) []string {
	exact := t.exact[tool]
	if len(t.globs) == 0 {
		return exact
	}
	var out []string
	for _, g := range t.globs {
		if ok, _ := doublestar.Match(g.pattern, tool); ok && !slices.Contains(exact, g.class) && !slices.Contains(out, g.class) {
			if out == nil {
				out = append(make([]string, 0, len(exact)+1), exact...)
			}
			out = append(out, g.class)
		}
	}
	if out == nil {
		return exact
	}
	return out
}

// checkRuleClasses reports classes a rule names that no ToolClasses file
// declares: such a rule would silently never match.
func (c *compiler) checkRuleClasses(r *policy.Rule) {
	for _, cl := range r.Classes {
		if _, ok := c.classes.byName[cl.Value]; !ok {
			names := make([]string, 0, len(c.classes.order))
			for _, k := range c.classes.order {
				names = append(names, k.Name)
			}
			msg := fmt.Sprintf("rule %s matches tool class %q, but no ToolClasses file of the set declares it", r.ID.Value, cl.Value)
			if len(names) > 0 {
				msg += fmt.Sprintf("; declared: %v", names)
			} else {
				msg += "; include the built-in tool classes or a ToolClasses file of your own"
			}
			c.errorf(policy.CodeUndeclaredClass, cl.Pos, "%s", msg)
		}
	}
}

// classRead is one read of command, paths or classes.
type classRead struct {
	pos  policy.Pos
	what string // the expression's place: "rule x condition"
	name string // command, paths or classes
}

// checkClassReads reports every read of command, paths or classes in a set
// with no tool classes (no_tool_classes): there, command is always "",
// paths and classes always empty, so a rule testing them would silently
// never match and the call be allowed. The built-in tool classes
// (policies.ToolClasses) are what the command line adds; policies.Select
// and package celguard's Load add them too.
func (c *compiler) checkClassReads() {
	if len(c.classes.order) > 0 {
		return
	}
	for _, r := range c.classReads {
		c.errorf(policy.CodeNoToolClasses, r.pos, "%s reads %s, but the set has no tool classes, so %s is always empty "+
			"and the rule would silently never match; compile with the built-in tool classes "+
			"(policies.Select, celguard.Load or policies.ToolClasses()) or a ToolClasses file of your own", r.what, r.name, r.name)
	}
}

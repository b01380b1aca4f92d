package policy

import (
	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"
)

// KindToolClasses is the kind of a tool-class file: a mapping of the tool
// names hosts use to the classes policies match on, so one policy serves
// Claude Code, Gemini CLI, Codex, Cursor and any MCP server.
const KindToolClasses = "ToolClasses"

// ToolClasses is one parsed tool-class file. Every such file of a set is
// merged: a class named in two files gets the tools and arguments of both,
// which is how users extend the built-in mapping.
type ToolClasses struct {
	File    string
	Pos     Pos
	Name    String
	Classes []ToolClass
}

// ToolClass is one class: the tools in it and the arguments that carry what
// rules look at.
type ToolClass struct {
	Name String
	// Tools are exact names or globs ("mcp__*").
	Tools []String
	// CommandArgs are the arguments that carry a shell command, tried in
	// order; the first present string is the call's `command`.
	CommandArgs []String
	// PathArgs are the arguments that carry file paths; every present string
	// is in the call's `paths`.
	PathArgs []String
	// ShapeArgs and ShapeNames (the class's `shape`) put tools that no class
	// carrying arguments names into this class by the shape of their
	// arguments: a tool with a string (or list of strings) argument named
	// in ShapeArgs, and, when ShapeNames is not empty, whose lower-cased
	// name contains one of them. Such a tool's command or paths are read
	// from ShapeArgs.
	ShapeArgs  []String
	ShapeNames []String
}

func (d *decoder) toolClasses(n *yaml.Node) *ToolClasses {
	tc := &ToolClasses{File: d.file, Pos: d.pos(n)}
	if d.fields(n, "the tool-class file", map[string]func(k, v *yaml.Node){
		"apiVersion":  func(_, v *yaml.Node) { d.apiVersion(v) },
		"kind":        func(_, v *yaml.Node) {},
		"name":        func(_, v *yaml.Node) { tc.Name = d.id(v, "name") },
		"description": func(_, v *yaml.Node) { d.text(v, "description") },
		"classes": func(_, v *yaml.Node) {
			for _, c := range d.list(v, "classes") {
				tc.Classes = append(tc.Classes, d.toolClass(c))
			}
		},
	}) {
		d.require(n, "the tool-class file", "apiVersion", "kind", "name", "classes")
	}
	seen := map[string]Pos{}
	for _, c := range tc.Classes {
		d.dup(seen, "class", c.Name)
	}
	return tc
}

func (d *decoder) toolClass(n *yaml.Node) ToolClass {
	var c ToolClass
	names := func(v *yaml.Node, what string, glob bool) []String {
		var out []String
		for _, t := range d.list(v, what) {
			s, ok := d.str(t, what)
			if !ok {
				continue
			}
			if s.Value == "" || (glob && !doublestar.ValidatePattern(s.Value)) {
				d.ds.errorf(CodeInvalidGlob, s.Pos, "%s entry %q is not a valid name or glob", what, s.Value)
				continue
			}
			out = append(out, s)
		}
		return out
	}
	if d.fields(n, "a class", map[string]func(k, v *yaml.Node){
		"name":         func(_, v *yaml.Node) { c.Name = d.ident(v, "class name") },
		"description":  func(_, v *yaml.Node) { d.text(v, "description") },
		"tools":        func(_, v *yaml.Node) { c.Tools = names(v, "tools", true) },
		"command_args": func(_, v *yaml.Node) { c.CommandArgs = names(v, "command_args", false) },
		"path_args":    func(_, v *yaml.Node) { c.PathArgs = names(v, "path_args", false) },
		"shape": func(_, v *yaml.Node) {
			d.fields(v, "a class's shape", map[string]func(k, v *yaml.Node){
				"args":  func(_, v *yaml.Node) { c.ShapeArgs = names(v, "shape args", false) },
				"names": func(_, v *yaml.Node) { c.ShapeNames = names(v, "shape names", false) },
			})
		},
	}) {
		d.require(n, "a class", "name", "tools")
	}
	return c
}

// apiVersion checks the apiVersion field of any document kind.
func (d *decoder) apiVersion(v *yaml.Node) {
	if s, ok := d.str(v, "apiVersion"); ok && s.Value != APIVersion {
		d.ds.errorf(CodeInvalidValue, s.Pos, "apiVersion must be %q, not %q", APIVersion, s.Value)
	}
}

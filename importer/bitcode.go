package importer

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard/policy"
)

// BitCode guard plugins (github.com/sazid/bitcode, internal/guard/plugins.go):
// a YAML file, or a Markdown file with YAML front matter, holding
//
//	id: block-docker        # optional: the file name without extension
//	tool: Bash              # optional: comma-separated names, compared case-insensitively; empty: every tool
//	patterns:               # in the front matter, or else in the Markdown body
//	  - match: "docker"     # Go regexp, searched in args.command, for the tool Bash only
//	    file_match: ".env*" # filepath.Match glob on the base name of args.file_path, for Read, Write and Edit only
//	    verdict: ask        # allow | deny | ask (llm: ask when no LLM guard is configured)
//	    reason: "..."
//
// Within a guard the first pattern that matches decides. BitCode keeps its
// guards in a map and tries them in Go's random map order, so which of two
// matching guards decides is chance: the import takes the strictest
// (deny > ask > allow), which is what BitCode decides in its strictest
// order, and says so nowhere else because it is never looser. A later
// guard with the same id replaces an earlier one.

// bitcodeFileTools are the tools whose file_path BitCode globs.
var bitcodeFileTools = []string{"Read", "Write", "Edit"}

// guard is one parsed guard plugin.
type guard struct {
	id       string
	file     string
	pos      policy.Pos
	tools    []string
	patterns []guardPattern
}

type guardPattern struct {
	re      *regexp.Regexp
	glob    string
	globRE  string
	verdict string // allow, ask or block
	reason  string
	pos     policy.Pos
	index   int
}

// appliesTo reports whether BitCode's tool list admits the tool (EqualFold).
func (g *guard) appliesTo(tool string) bool {
	if len(g.tools) == 0 {
		return true
	}
	for _, t := range g.tools {
		if strings.EqualFold(t, tool) {
			return true
		}
	}
	return false
}

func (g *guard) fileTools() []string {
	var out []string
	for _, t := range bitcodeFileTools {
		if g.appliesTo(t) {
			out = append(out, t)
		}
	}
	return out
}

// hit is the CEL condition that pattern p of g matches; "" when it can
// never match (no match for Bash, no file_match for a file tool).
func (g *guard) hit(p guardPattern) string {
	var parts []string
	if p.re != nil && g.appliesTo("Bash") {
		parts = append(parts, fmt.Sprintf(`tool == "Bash" && bitcode_cmd.matches(%q)`, p.re.String()))
	}
	if p.glob != "" {
		if ft := g.fileTools(); len(ft) > 0 {
			parts = append(parts, fmt.Sprintf(`tool in %s && bitcode_file != "" && path.base(bitcode_file).matches(%q)`, celList(ft), p.globRE))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + parts[0] + ") || (" + parts[1] + ")"
}

// bitcodeVariables are the arguments BitCode reads: a command or path that
// is not a string reads as "".
var bitcodeVariables = []variable{
	{"bitcode_cmd", `has(args.command) && type(args.command) == string ? string(args.command) : ""`},
	{"bitcode_file", `has(args.file_path) && type(args.file_path) == string ? string(args.file_path) : ""`},
}

// rules returns the celguard rules of a guard, in pattern order: pattern i
// decides when it matches and no earlier pattern of a weaker verdict does
// (an earlier one of the same or a stricter verdict decides first anyway,
// by priority and file order).
func (g *guard) rules() ([]rule, policy.Diagnostics) {
	var out []rule
	var ds policy.Diagnostics
	tools := []string{}
	for _, p := range g.patterns {
		h := g.hit(p)
		if h == "" {
			ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, p.pos,
				"pattern %d of guard %q can never match: BitCode applies match to Bash and file_match to Read, Write and Edit, and this guard's tool list or the pattern leaves neither", p.index+1, g.id))
			continue
		}
		cond := h
		var excl []string
		for _, e := range g.patterns[:p.index] {
			if severity(e.verdict) < severity(p.verdict) {
				if eh := g.hit(e); eh != "" {
					excl = append(excl, "("+eh+")")
				}
			}
		}
		if len(excl) > 0 {
			cond = "(" + h + ") && !(" + strings.Join(excl, " || ") + ")"
		}
		var ts []string
		if p.re != nil && g.appliesTo("Bash") {
			ts = append(ts, "Bash")
		}
		if p.glob != "" {
			ts = append(ts, g.fileTools()...)
		}
		_ = tools
		reason := p.reason
		if reason == "" {
			reason = fmt.Sprintf("BitCode guard %s, pattern %d", g.id, p.index+1)
		}
		out = append(out, rule{
			id:        sanitizeID("guard-"+g.id) + fmt.Sprintf("-%d", p.index+1),
			priority:  priorityOf(p.verdict),
			tools:     ts,
			condition: cond,
			verdict:   p.verdict,
			reason:    reason,
			code:      "bitcode_guard",
			src:       p.pos,
			comment:   fmt.Sprintf("guard %s pattern %d (%s)", g.id, p.index+1, p.describe()),
		})
	}
	return out, ds
}

func (p guardPattern) describe() string {
	var parts []string
	if p.re != nil {
		parts = append(parts, "match "+q(p.re.String()))
	}
	if p.glob != "" {
		parts = append(parts, "file_match "+q(p.glob))
	}
	return strings.Join(parts, ", ")
}

// ParseGuards parses BitCode guard plugin files in precedence order (later
// files replace earlier ones of the same id) and returns the guards that
// remain, in the order each id first appeared. Files BitCode does not read
// (another extension) are an error here: pass only .yaml, .yml and .md.
func parseGuards(files []File) ([]*guard, policy.Diagnostics) {
	var ds policy.Diagnostics
	var order []string
	byID := map[string]*guard{}
	for _, f := range files {
		g, gds := parseGuard(f)
		ds = append(ds, gds...)
		if g == nil {
			continue
		}
		if prev, ok := byID[g.id]; ok {
			ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, prev.pos,
				"guard %q is replaced by the one of the same id at %s (a later guard of the same id wins)", g.id, g.pos))
		} else {
			order = append(order, g.id)
		}
		byID[g.id] = g
	}
	out := make([]*guard, 0, len(order))
	for _, id := range order {
		out = append(out, byID[id])
	}
	return out, ds
}

// parseGuard parses one guard file; nil when BitCode would load no rule
// from it (with an info saying why) or on errors.
func parseGuard(f File) (*guard, policy.Diagnostics) {
	var ds policy.Diagnostics
	at := func(line, col int) policy.Pos { return policy.Pos{File: f.Name, Line: line, Col: col} }
	ext := path.Ext(filepath.ToSlash(f.Name))
	if !utf8.Valid(f.Data) {
		return nil, policy.Diagnostics{diag(CodeSyntax, policy.SeverityError, at(1, 1), "the file is not UTF-8 text")}
	}
	content := string(f.Data)
	id := strings.TrimSuffix(path.Base(filepath.ToSlash(f.Name)), ext)
	var meta *yaml.Node
	metaLine := 0 // lines before the YAML text of meta
	var body string
	bodyLine := 0
	switch ext {
	case ".yaml", ".yml":
		n, err := parseYAML(content)
		if err != nil {
			return nil, policy.Diagnostics{yamlDiag(f.Name, 0, err)}
		}
		meta = n
	case ".md":
		m, b, bl, ok := frontMatter(content)
		if ok {
			n, err := parseYAML(m)
			if err != nil {
				return nil, policy.Diagnostics{yamlDiag(f.Name, 1, err)}
			}
			meta, metaLine = n, 1
		}
		body, bodyLine = b, bl
	default:
		return nil, policy.Diagnostics{diag(CodeInvalid, policy.SeverityError, at(1, 1), "BitCode reads guard files ending in .yaml, .yml or .md, not %q", ext)}
	}
	g := &guard{id: id, file: f.Name, pos: at(1, 1)}
	var patterns *yaml.Node
	if meta != nil {
		if meta.Kind != yaml.MappingNode {
			return nil, policy.Diagnostics{diag(CodeSyntax, policy.SeverityError, at(meta.Line+metaLine, meta.Column), "a guard is a YAML mapping of id, tool and patterns")}
		}
		for i := 0; i+1 < len(meta.Content); i += 2 {
			k, v := meta.Content[i], meta.Content[i+1]
			pos := at(k.Line+metaLine, k.Column)
			switch k.Value {
			case "id":
				if s, ok := str(v); ok {
					if s != "" {
						g.id = s
					}
				} else {
					ds = append(ds, diag(CodeInvalid, policy.SeverityError, pos, "id must be a string"))
				}
			case "tool":
				if s, ok := str(v); ok {
					if s != "" {
						for _, t := range strings.Split(s, ",") {
							g.tools = append(g.tools, strings.TrimSpace(t))
						}
					}
				} else {
					ds = append(ds, diag(CodeInvalid, policy.SeverityError, pos, "tool must be a string of comma-separated tool names"))
				}
			case "patterns":
				patterns = v
			default:
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, pos, "BitCode ignores the key %q", k.Value))
			}
		}
	}
	pLine := metaLine
	if (patterns == nil || isEmptySeq(patterns)) && body != "" {
		// BitCode reads the patterns from a Markdown body when the front
		// matter has none; a body that is not such YAML has none.
		if n, err := parseYAML(body); err == nil && n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "patterns" {
					patterns, pLine = n.Content[i+1], bodyLine
				}
			}
		}
	}
	if patterns == nil || isEmptySeq(patterns) {
		ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, g.pos, "guard %q has no patterns: BitCode loads no rule from it", g.id))
		return nil, ds
	}
	if patterns.Kind != yaml.SequenceNode {
		ds = append(ds, diag(CodeInvalid, policy.SeverityError, at(patterns.Line+pLine, patterns.Column), "patterns must be a list"))
		return nil, ds
	}
	for i, pn := range patterns.Content {
		ppos := at(pn.Line+pLine, pn.Column)
		if pn.Kind != yaml.MappingNode {
			ds = append(ds, diag(CodeInvalid, policy.SeverityError, ppos, "a pattern is a mapping of match or file_match, verdict and reason"))
			continue
		}
		p := guardPattern{pos: ppos, index: len(g.patterns)}
		var verdict string
		var verdictPos policy.Pos = ppos
		for j := 0; j+1 < len(pn.Content); j += 2 {
			k, v := pn.Content[j], pn.Content[j+1]
			kpos := at(k.Line+pLine, k.Column)
			vpos := at(v.Line+pLine, v.Column)
			s, ok := str(v)
			if !ok && k.Value != "" {
				switch k.Value {
				case "match", "file_match", "verdict", "reason":
					ds = append(ds, diag(CodeInvalid, policy.SeverityError, vpos, "%s must be a string", k.Value))
					continue
				}
			}
			switch k.Value {
			case "match":
				if s == "" {
					continue
				}
				re, err := regexp.Compile(s)
				if err != nil {
					// BitCode drops the pattern without a word; an import
					// that did the same would lose a rule unseen.
					ds = append(ds, diag(CodeInvalid, policy.SeverityError, vpos, "match %q is not a Go regular expression (BitCode would silently drop this pattern): %v", s, err))
					continue
				}
				p.re = re
			case "file_match":
				if s == "" {
					continue
				}
				re, err := globRegexp(s)
				if err != nil {
					ds = append(ds, diag(CodeInvalid, policy.SeverityError, vpos, "file_match %q is not a valid glob (BitCode would never match it): %v", s, err))
					continue
				}
				p.glob, p.globRE = s, re
			case "verdict":
				verdict, verdictPos = s, vpos
			case "reason":
				p.reason = s
			default:
				ds = append(ds, diag(CodeIgnored, policy.SeverityInfo, kpos, "BitCode ignores the key %q", k.Value))
			}
		}
		_ = i
		switch verdict {
		case "allow":
			p.verdict = "allow"
		case "deny":
			p.verdict = "block"
		case "ask":
			p.verdict = "ask"
		case "llm":
			p.verdict = "ask"
			ds = append(ds, diag(CodeApproximated, policy.SeverityWarning, verdictPos,
				"verdict llm asks BitCode's LLM guard, which may allow or deny; celguard imports it as ask (what BitCode does without an LLM guard), which is never looser"))
		default:
			ds = append(ds, diag(CodeInvalid, policy.SeverityError, verdictPos, "verdict %q is not allow, deny, ask or llm", verdict))
			continue
		}
		g.patterns = append(g.patterns, p)
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return g, ds
}

func isEmptySeq(n *yaml.Node) bool {
	return (n.Kind == yaml.SequenceNode && len(n.Content) == 0) || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// str is a YAML string scalar's value (a null is "").
func str(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	switch n.Tag {
	case "!!str":
		return n.Value, true
	case "!!null":
		return "", true
	}
	return "", false
}

// parseYAML parses one YAML document; nil for an empty one.
func parseYAML(s string) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		return nil, err
	}
	if n.Kind == 0 || len(n.Content) == 0 {
		return nil, nil
	}
	return resolveAliases(n.Content[0]), nil
}

// resolveAliases refuses nothing but follows aliases, so that a pattern
// written once and referenced twice is read like BitCode reads it.
func resolveAliases(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

func yamlDiag(file string, offset int, err error) policy.Diagnostic {
	line := 1
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		fmt.Sscanf(m[1], "%d", &line)
	}
	return diag(CodeSyntax, policy.SeverityError, policy.Pos{File: file, Line: line + offset, Col: 1}, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// frontMatter splits Markdown as BitCode's ParseFrontmatter does: YAML
// between a first line "---" and the next "\n---"; the body after it (and
// the lines before the body). ok is false when there is no front matter.
func frontMatter(content string) (meta, body string, bodyLine int, ok bool) {
	if !strings.HasPrefix(content, "---\n") && !strings.HasPrefix(content, "---\r\n") {
		return "", content, 0, false
	}
	rest := content[4:]
	idx := strings.Index(rest, "\n---")
	if idx < 0 {
		return "", content, 0, false
	}
	meta = rest[:idx]
	after := rest[idx+4:]
	if strings.HasPrefix(after, "\n") {
		after = after[1:]
	} else if strings.HasPrefix(after, "\r\n") {
		after = after[2:]
	}
	bodyLine = strings.Count(content[:len(content)-len(after)], "\n")
	return meta, after, bodyLine, true
}

// globRegexp translates a filepath.Match pattern (Unix) into an RE2
// regular expression over the whole name, refusing what filepath.Match
// calls malformed.
func globRegexp(glob string) (string, error) {
	if _, err := filepath.Match(glob, ""); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("^")
	rs := []rune(glob)
	esc := func(r rune) string { return fmt.Sprintf(`\x{%x}`, r) }
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '\\':
			i++
			if i >= len(rs) {
				return "", filepath.ErrBadPattern
			}
			b.WriteString(esc(rs[i]))
		case '[':
			i++
			neg := false
			if i < len(rs) && rs[i] == '^' {
				neg = true
				i++
			}
			var ranges []string
			first := true
			for {
				if i >= len(rs) {
					return "", filepath.ErrBadPattern
				}
				if rs[i] == ']' && !first {
					break
				}
				first = false
				lo, n, err := globEsc(rs[i:])
				if err != nil {
					return "", err
				}
				i += n
				hi := lo
				if i < len(rs) && rs[i] == '-' {
					i++
					hi, n, err = globEsc(rs[i:])
					if err != nil {
						return "", err
					}
					i += n
				}
				if lo <= hi { // filepath.Match: a reversed range matches nothing
					ranges = append(ranges, esc(lo)+"-"+esc(hi))
				}
			}
			switch {
			case len(ranges) == 0 && !neg:
				b.WriteString(`[^\x00-\x{10ffff}]`) // matches nothing
			case len(ranges) == 0:
				b.WriteString(`(?s:.)`)
			case neg:
				b.WriteString("[^" + strings.Join(ranges, "") + "]")
			default:
				b.WriteString("[" + strings.Join(ranges, "") + "]")
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	if _, err := regexp.Compile(b.String()); err != nil {
		return "", err
	}
	return b.String(), nil
}

// globEsc reads one character of a class as filepath.Match's getEsc does.
func globEsc(rs []rune) (rune, int, error) {
	if len(rs) == 0 || rs[0] == '-' || rs[0] == ']' {
		return 0, 0, filepath.ErrBadPattern
	}
	if rs[0] == '\\' {
		if len(rs) < 2 {
			return 0, 0, filepath.ErrBadPattern
		}
		return rs[1], 2, nil
	}
	return rs[0], 1, nil
}

// decideBitCode is BitCode's decision for a call by the guards, in the
// strictest order: the strictest first-matching pattern over the guards,
// the first guard among equals. rule is the celguard rule id that decides,
// "none" when no guard matches.
func decideBitCode(guards []*guard, tool string, args map[string]any) (verdict, ruleID string) {
	verdict, ruleID = "allow", "none"
	best := 0
	for _, g := range guards {
		if !g.appliesTo(tool) {
			continue
		}
		for _, p := range g.patterns {
			if !bitcodeMatches(g, p, tool, args) {
				continue
			}
			if s := severity(p.verdict); s > best {
				best, verdict, ruleID = s, p.verdict, sanitizeID("guard-"+g.id)+fmt.Sprintf("-%d", p.index+1)
			}
			break
		}
	}
	return verdict, ruleID
}

// bitcodeMatches is PluginRule.Evaluate's test of one pattern.
func bitcodeMatches(g *guard, p guardPattern, tool string, args map[string]any) bool {
	if p.re != nil && tool == "Bash" {
		cmd, _ := args["command"].(string)
		if p.re.MatchString(cmd) {
			return true
		}
	}
	if p.glob != "" && (tool == "Write" || tool == "Edit" || tool == "Read") {
		fp, _ := args["file_path"].(string)
		if fp == "" {
			return false
		}
		ok, _ := filepath.Match(p.glob, filepath.Base(fp))
		return ok
	}
	return false
}

func importBitCode(files []File) (*doc, policy.Diagnostics) {
	guards, ds := parseGuards(files)
	if ds.HasErrors() {
		return nil, ds
	}
	d := &doc{name: "bitcode-guards", description: "BitCode guard plugins, imported: the strictest matching guard decides.", variables: bitcodeVariables}
	for _, g := range guards {
		rs, rds := g.rules()
		ds = append(ds, rds...)
		d.rules = append(d.rules, rs...)
	}
	d.cases = bitcodeCases(guards)
	return d, ds
}

// bitcodeCases makes a call for every pattern that matches it, and one that
// matches nothing, each expected to get BitCode's decision.
func bitcodeCases(guards []*guard) []testCase {
	var out []testCase
	seen := map[string]bool{}
	add := func(name, tool string, args map[string]any, src policy.Pos) {
		key := tool + "\x00" + fmt.Sprint(args)
		if seen[key] {
			return
		}
		seen[key] = true
		v, r := decideBitCode(guards, tool, args)
		out = append(out, testCase{name: name, tool: tool, args: args, verdict: v, rule: r, src: src})
	}
	for _, g := range guards {
		for _, p := range g.patterns {
			if p.re != nil && g.appliesTo("Bash") {
				if s, ok := regexExample(p.re); ok {
					add(fmt.Sprintf("%s pattern %d: %s", g.id, p.index+1, s), "Bash", map[string]any{"command": s}, p.pos)
				}
			}
			if p.glob != "" {
				if ft := g.fileTools(); len(ft) > 0 {
					if name, ok := globExample(p.glob); ok {
						fp := "src/" + name
						add(fmt.Sprintf("%s pattern %d: %s %s", g.id, p.index+1, ft[0], fp), ft[0], map[string]any{"file_path": fp}, p.pos)
					}
				}
			}
		}
	}
	add("a call no guard names", "NoSuchTool", map[string]any{"x": "y"}, policy.Pos{})
	return out
}

// regexExample builds a short string the regexp matches, if it finds one.
func regexExample(re *regexp.Regexp) (string, bool) {
	sre, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	genRegexp(&b, sre.Simplify(), 0)
	s := b.String()
	if !utf8.ValidString(s) || !re.MatchString(s) {
		return "", false
	}
	return s, true
}

func genRegexp(b *strings.Builder, re *syntax.Regexp, depth int) {
	if depth > 50 || b.Len() > 200 {
		return
	}
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		if len(re.Rune) >= 2 {
			r := re.Rune[0]
			// Prefer a printable character of the class.
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if lo, hi := re.Rune[i], re.Rune[i+1]; lo <= 'z' && hi >= 'a' {
					r = max(lo, 'a')
					break
				} else if lo >= ' ' && lo < 0x7f {
					r = lo
					break
				}
			}
			b.WriteRune(r)
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		genRegexp(b, re.Sub[0], depth+1)
	case syntax.OpPlus:
		genRegexp(b, re.Sub[0], depth+1)
	case syntax.OpRepeat:
		for i := 0; i < re.Min; i++ {
			genRegexp(b, re.Sub[0], depth+1)
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			genRegexp(b, s, depth+1)
		}
	case syntax.OpAlternate:
		genRegexp(b, re.Sub[0], depth+1)
	}
}

// globExample builds a base name the glob matches, if it finds one.
func globExample(glob string) (string, bool) {
	var b strings.Builder
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
		case '?':
			b.WriteByte('x')
		case '\\':
			if i+1 < len(rs) {
				i++
				b.WriteRune(rs[i])
			}
		case '[':
			j := i + 1
			for j < len(rs) && (rs[j] != ']' || j == i+1 || (j == i+2 && rs[i+1] == '^')) {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			class := string(rs[i:min(j+1, len(rs))])
			found := false
			for _, c := range class + "abcxyz019_.ABC-" {
				if ok, _ := filepath.Match(class, string(c)); ok {
					b.WriteRune(c)
					found = true
					break
				}
			}
			if !found {
				return "", false
			}
			i = j
		default:
			b.WriteRune(r)
		}
	}
	name := b.String()
	if name == "" || strings.Contains(name, "/") {
		return "", false
	}
	if ok, _ := filepath.Match(glob, name); !ok {
		return "", false
	}
	return name, true
}

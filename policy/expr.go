package policy

import (
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Expr is CEL source text as written in a policy file, with the file position
// of every character so that a CEL error points into the YAML file, not into
// the expression alone.
type Expr struct {
	// Text is the expression after YAML unquoting and folding.
	Text string
	// Pos is the position of the first character of Text.
	Pos Pos
	// runs are the file positions of the runes of Text, plus one past the
	// end, as runs of consecutive columns of one line (Layout), all in
	// Pos.File; nil means Text sits on one line starting at Pos. A table
	// of one position per rune cost 32 bytes a character, 2 MB for the
	// recommended bundle's expressions in every process that loads it.
	runs []PosRun
}

// NewExpr returns an expression whose text starts at pos on a single line. It
// is meant for expressions built in code and for tests.
func NewExpr(text string, pos Pos) Expr { return Expr{Text: text, Pos: pos} }

// PosAt maps a location inside Text to the file. line is 1-based and col is a
// 0-based rune column, as cel-go reports them (common.Location).
func (e Expr) PosAt(line, col int) Pos {
	off := 0
	rest := e.Text
	for l := 1; l < line; l++ {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		off += utf8.RuneCountInString(rest[:i+1])
		rest = rest[i+1:]
	}
	return e.PosOffset(off + col)
}

// PosOffset maps a rune offset inside Text to the file.
func (e Expr) PosOffset(off int) Pos {
	if off < 0 {
		off = 0
	}
	if e.runs == nil {
		return Pos{File: e.Pos.File, Line: e.Pos.Line, Col: e.Pos.Col + off}
	}
	for i, r := range e.runs {
		if off < r.N || i == len(e.runs)-1 {
			// Past the end: the place one past the end (the last run's
			// last place).
			off = min(off, r.N-1)
			return Pos{File: e.Pos.File, Line: r.Line, Col: r.Col + off}
		}
		off -= r.N
	}
	return e.Pos
}

// exprFromNode builds an Expr from a scalar node, aligning the decoded value
// with the raw source so every rune has its file position. lines is the file
// split into lines of runes.
func exprFromNode(file string, lines [][]rune, n *yaml.Node) Expr {
	e, _ := alignedExpr(file, lines, n)
	return e
}

// alignedExpr is exprFromNode's Expr and the position of each of its
// runes, plus one past the end (nil when the alignment failed).
func alignedExpr(file string, lines [][]rune, n *yaml.Node) (Expr, []Pos) {
	start := Pos{File: file, Line: n.Line, Col: n.Column}
	e := Expr{Text: n.Value, Pos: start}
	value := []rune(n.Value)
	a := aligner{lines: lines, file: file}
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		a.block = true
		a.line = n.Line // 1-based; the indicator line
		a.line++
		a.indent = blockIndent(lines, a.line)
		a.col = a.indent
	default:
		a.line, a.col = n.Line, n.Column-1
		a.skipProperties()
		switch n.Style {
		case yaml.DoubleQuotedStyle:
			a.quote = '"'
			a.col++
		case yaml.SingleQuotedStyle:
			a.quote = '\''
			a.col++
		}
	}
	if r, ok := a.cur(); ok && r != '\n' {
		e.Pos = a.pos() // the first character, should the alignment fail
	}
	at, ok := a.align(value)
	if !ok {
		// The source did not line up (an unusual YAML construct); fall back
		// to the scalar's own position for the whole expression.
		return e, nil
	}
	e.runs = runsOf(at)
	if len(at) > 0 {
		e.Pos = at[0]
	}
	return e, at
}

// runsOf writes at, places all in one file, as runs of consecutive
// columns of one line.
func runsOf(at []Pos) []PosRun {
	var runs []PosRun
	for _, p := range at {
		if n := len(runs); n > 0 {
			if r := &runs[n-1]; p.Line == r.Line && p.Col == r.Col+r.N {
				r.N++
				continue
			}
		}
		runs = append(runs, PosRun{N: 1, Line: p.Line, Col: p.Col})
	}
	return slices.Clip(runs)
}

// blockIndent returns the indentation of the first non-blank line at or after
// line (1-based).
func blockIndent(lines [][]rune, line int) int {
	for l := line; l <= len(lines); l++ {
		s := lines[l-1]
		i := 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) {
			return i
		}
	}
	return 0
}

type aligner struct {
	lines  [][]rune
	file   string
	line   int // 1-based
	col    int // 0-based rune index in the line
	quote  rune
	block  bool
	indent int
}

func (a *aligner) cur() (rune, bool) {
	if a.line < 1 || a.line > len(a.lines) {
		return 0, false
	}
	l := a.lines[a.line-1]
	if a.col >= len(l) {
		return '\n', true
	}
	return l[a.col], true
}

func (a *aligner) pos() Pos { return Pos{File: a.file, Line: a.line, Col: a.col + 1} }

// skipProperties moves past the anchor (&a) and tag (!t) written before a
// flow scalar: yaml.v3 places such a node at its first property.
func (a *aligner) skipProperties() {
	for seen := false; ; {
		r, ok := a.cur()
		switch {
		case !ok:
			return
		case r == '&' || r == '!':
			seen = true
			for ok && r != ' ' && r != '\t' && r != '\n' {
				a.col++
				r, ok = a.cur()
			}
		case seen && (r == ' ' || r == '\t'):
			a.col++
		case seen && r == '\n':
			if !a.nextLine() {
				return
			}
		default:
			return
		}
	}
}

// nextLine moves to the start of the content of the next line.
func (a *aligner) nextLine() bool {
	a.line++
	if a.line > len(a.lines) {
		return false
	}
	a.col = 0
	l := a.lines[a.line-1]
	if a.block {
		for a.col < a.indent && a.col < len(l) && l[a.col] == ' ' {
			a.col++
		}
		return true
	}
	for a.col < len(l) && (l[a.col] == ' ' || l[a.col] == '\t') {
		a.col++
	}
	return true
}

func (a *aligner) align(value []rune) ([]Pos, bool) {
	at := make([]Pos, 0, len(value)+1)
	endsInBreak := false // the last rune of value is a line break of the source
	for i := 0; i < len(value); {
		endsInBreak = false
		r, ok := a.cur()
		if !ok {
			return nil, false
		}
		v := value[i]
		switch {
		case r == '\n' && (v == '\n' || v == ' '):
			// A line break in the source: kept as \n (literal) or folded to
			// a space. Blank lines in folded scalars become \n; each one
			// consumes one source line.
			at = append(at, a.pos())
			i++
			endsInBreak = true
			if !a.nextLine() {
				return nil, false
			}
		case r == '\n':
			// A folded break that produced nothing (for example a trailing
			// escaped line break): skip the source line.
			if !a.nextLine() {
				return nil, false
			}
		case a.quote == '\'' && r == '\'' && v == '\'':
			at = append(at, a.pos())
			a.col += 2
			i++
		case a.quote == '"' && r == '\\' && a.col+1 >= len(a.lines[a.line-1]):
			// An escaped line break joins the lines and produces nothing.
			if !a.nextLine() {
				return nil, false
			}
		case a.quote == '"' && r == '\\':
			at = append(at, a.pos())
			a.col += escapeLen(a.lines[a.line-1][a.col:])
			i++
		case r == v:
			at = append(at, a.pos())
			a.col++
			i++
		case !a.block && (r == ' ' || r == '\t') && blank(a.lines[a.line-1][a.col:]):
			// Trailing white space before a line break of a flow scalar is
			// not part of the value.
			a.col = len(a.lines[a.line-1])
		default:
			return nil, false
		}
	}
	if endsInBreak {
		// One past the end is the end of the last line, not the start of
		// the next key: a CEL error at the end of the text (an unfinished
		// expression in a block scalar) points after its last token.
		at = append(at, at[len(at)-1])
	} else {
		at = append(at, a.pos())
	}
	return at, true
}

func blank(s []rune) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' {
			return false
		}
	}
	return true
}

// escapeLen is the length in runes of the escape sequence at the start of s.
func escapeLen(s []rune) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case 'x':
		return min(4, len(s))
	case 'u':
		return min(6, len(s))
	case 'U':
		return min(10, len(s))
	}
	return 2
}

// PosRun is a run of an expression's runes written one after another on
// one line of its file: N runes at Line, from column Col on.
type PosRun struct {
	N, Line, Col int
}

// Layout returns where the runes of Text (and the place one past its end)
// are in the file, as consecutive runs; nil when Text sits on one line
// starting at Pos. ok is always true: every place is in Pos.File.
// WithLayout rebuilds the expression from it: a compiled form that keeps
// Text, Pos and the layout gives back an Expr equal to the parsed one
// without parsing the file again.
func (e Expr) Layout() (runs []PosRun, ok bool) {
	return slices.Clone(e.runs), true
}

// WithLayout returns e with the layout runs (Expr.Layout); ok is false
// when runs cannot be the layout of e: a run without runes, more places
// than Text has bytes plus one, or a first place that is not Pos.
func (e Expr) WithLayout(runs []PosRun) (Expr, bool) {
	e.runs = nil
	if len(runs) == 0 {
		return e, true
	}
	total := 0
	for _, r := range runs {
		if r.N <= 0 || r.N > len(e.Text)+1-total {
			return Expr{}, false
		}
		total += r.N
	}
	if runs[0].Line != e.Pos.Line || runs[0].Col != e.Pos.Col {
		return Expr{}, false
	}
	e.runs = slices.Clip(runs)
	return e, true
}

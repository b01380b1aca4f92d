package sql

import (
	"regexp"
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// PostgreSQL's common read-only syntax. The TiDB parser reads MySQL's
// grammar; a PostgreSQL query using a cast (x::jsonb), a JSON or regular
// expression operator (->>, @>, ~*), ILIKE or DISTINCT ON does not parse
// and was asked (fail closed). postgresRead proves such a query read-only
// or leaves it unparsed: it rewrites only those tokens, outside string
// literals, quoted identifiers and comments, into MySQL forms of the same
// shape (a cast is dropped, an operator becomes +, ILIKE becomes LIKE,
// DISTINCT ON (...) becomes DISTINCT), parses the result with the TiDB
// parser and accepts it only when every statement is a plain SELECT (or
// UNION of them) with no INTO, no locking clause and no function outside
// pgReadFuncs. Where the two grammars would read the text apart, it is
// made to read alike (a comment becomes a space, a backslash in a standard
// string is doubled) or stays unparsed (dollar quoting, #, `).

// postgresRead returns the read-only classification of text, or false.
func postgresRead(text string) (Result, bool) {
	rewritten, ok := rewritePostgres(text)
	if !ok {
		return Result{}, false
	}
	p := pool.Get().(*parser.Parser)
	defer pool.Put(p) // after the statements are read (see Classify)
	stmts, _, err := parse(p, rewritten)
	if err != nil || len(stmts) == 0 {
		return Result{}, false
	}
	res := Result{OK: true, Statements: make([]Statement, 0, len(stmts)), Effects: []string{Read}}
	for _, s := range stmts {
		switch s.(type) {
		case *ast.SelectStmt, *ast.SetOprStmt:
		default:
			return Result{}, false
		}
		v := &pgVisitor{}
		s.Accept(v)
		if v.bad {
			return Result{}, false
		}
		st := classify(s)
		if len(st.Effects) != 1 || st.Effects[0] != Read {
			return Result{}, false
		}
		st.Kind = "select"
		res.Statements = append(res.Statements, st)
	}
	return res, true
}

// pgVisitor marks a statement that is not proven read-only: a function
// outside pgReadFuncs (setval, pg_terminate_backend, dblink, ...), a
// locking clause, SELECT ... INTO.
type pgVisitor struct{ bad bool }

func (v *pgVisitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.FuncCallExpr:
		if !pgReadFuncs()[x.FnName.L] {
			v.bad = true
		}
	case *ast.SelectStmt:
		if x.SelectIntoOpt != nil || x.LockInfo != nil && x.LockInfo.LockType != ast.SelectLockNone {
			v.bad = true
		}
	}
	return n, v.bad
}

func (v *pgVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, !v.bad }

// pgReadFuncs are the functions a proven read may call: PostgreSQL's
// functions that compute a value from their arguments and read nothing
// beyond them (the aggregates and window functions TiDB reads as their
// own nodes need no entry).
var pgReadFuncs = sync.OnceValue(func() map[string]bool {
	return set("coalesce", "nullif", "greatest", "least", "lower", "upper", "length", "char_length", "substring", "substr",
		"trim", "ltrim", "rtrim", "btrim", "replace", "concat", "concat_ws", "left", "right", "lpad", "rpad", "position",
		"strpos", "split_part", "initcap", "reverse", "repeat", "md5", "round", "trunc", "abs", "ceil", "ceiling", "floor",
		"mod", "power", "sqrt", "sign", "now", "current_date", "current_timestamp", "localtimestamp", "date_trunc",
		"date_part", "extract", "age", "to_char", "to_date", "to_timestamp", "to_number", "make_date", "jsonb_array_length",
		"json_array_length", "jsonb_typeof", "json_typeof", "jsonb_extract_path", "jsonb_extract_path_text",
		"json_extract_path", "json_extract_path_text", "jsonb_build_object", "json_build_object", "jsonb_build_array",
		"json_build_array", "to_jsonb", "to_json", "row_to_json", "array_length", "cardinality", "array_to_string",
		"string_to_array", "regexp_replace", "regexp_match", "format", "if", "ifnull", "cast", "convert", "date",
		"timestamp", "interval", "isnull", "char", "octet_length", "bit_length", "quote_ident", "quote_literal",
		"array_position", "array_remove")
})

var (
	pgCast = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^::\s*(double\s+precision|character\s+varying|bit\s+varying|time(stamp)?\s+with(out)?\s+time\s+zone|"[^"]+"|[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?)(\s*\(\s*\d+(\s*,\s*\d+)?\s*\))?(\s*\[\s*\])*`)
	})
	pgOperator   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(->>|->|#>>|#>|@>|<@|\?\||\?&|!~\*|!~|~\*|~)`) })
	pgILike      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^ilike\b`) })
	pgDistinctOn = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^distinct\s+on\s*\(`) })
)

// rewritePostgres rewrites text's PostgreSQL-only tokens outside literals,
// quoted identifiers and comments (see the top of the file); false for
// text it does not read (a dollar-quoted string, an unterminated literal
// or comment).
func rewritePostgres(text string) (string, bool) {
	var b strings.Builder
	changed := false
	word := func(i int) bool { // at a word boundary
		return i == 0 || !isWordByte(text[i-1])
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"':
			// An escape string (E'...', E at a word boundary) is the only
			// literal whose backslashes escape, in PostgreSQL as in the
			// MySQL grammar; elsewhere a backslash is doubled so that the
			// MySQL grammar ends the literal where PostgreSQL does.
			escapes := c == '\'' && i > 0 && (text[i-1] == 'E' || text[i-1] == 'e') && word(i-1)
			j := i + 1
			for ; j < len(text); j++ {
				if text[j] == c {
					if j+1 < len(text) && text[j+1] == c {
						j++
						continue
					}
					break
				}
				if text[j] == '\\' && escapes {
					j++
				}
			}
			if j >= len(text) || c == '"' && strings.ContainsRune(text[i:j], '\\') {
				return "", false
			}
			if escapes {
				b.WriteString(text[i : j+1])
			} else {
				b.WriteString(strings.ReplaceAll(text[i:j+1], `\`, `\\`))
			}
			i = j + 1
		case c == '$' || c == '#' || c == '`':
			// Dollar quoting; # is an operator in PostgreSQL and starts a
			// comment in the MySQL grammar; ` quotes nothing in PostgreSQL.
			return "", false
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			// A comment is a space for both grammars (the MySQL grammar's
			// -- comment needs a space after it; PostgreSQL's does not).
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				j = len(text) - i
			}
			b.WriteByte(' ')
			i += j
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			if j < 0 || strings.Contains(text[i+2:i+2+j], "/*") || strings.HasPrefix(text[i+2:], "!") || strings.HasPrefix(text[i+2:], "+") {
				return "", false
			}
			b.WriteByte(' ')
			i += 2 + j + 2
		case c == ':' && strings.HasPrefix(text[i:], "::"):
			m := pgCast().FindString(text[i:])
			if m == "" {
				return "", false
			}
			i += len(m)
			changed = true
		case pgOperator().MatchString(text[i:]):
			m := pgOperator().FindString(text[i:])
			b.WriteString(" + ")
			i += len(m)
			changed = true
		case word(i) && pgILike().MatchString(text[i:]):
			b.WriteString("LIKE")
			i += len("ilike")
			changed = true
		case word(i) && pgDistinctOn().MatchString(text[i:]):
			m := pgDistinctOn().FindString(text[i:])
			j, depth := i+len(m), 1
			for ; j < len(text) && depth > 0; j++ {
				switch text[j] {
				case '(':
					depth++
				case ')':
					depth--
				case '\'', '"', '$', ';':
					return "", false
				}
			}
			if depth != 0 {
				return "", false
			}
			b.WriteString("DISTINCT ")
			i = j
			changed = true
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), changed
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

package sql

import (
	"regexp"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
)

var (
	fuzzLiterals = regexp.MustCompile(`'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|/\*[^*]*\*/`)
	fuzzWrites   = regexp.MustCompile(`(?i)\b(insert|update|delete|drop|truncate|alter|grant|revoke|create|copy|into|call|do|execute|setval|nextval|pg_terminate_backend|pg_cancel_backend|set_config|dblink|dblink_exec|lo_import|lo_export|pg_read_file|pg_ls_dir)\b`)
)

// FuzzClassifyPostgres: Classify never panics, and what it proves a read
// through PostgreSQL's syntax (text the MySQL grammar alone does not
// parse) is one: only reads, no dollar quoting, and no word outside
// literals and comments that writes, locks, calls a procedure or reaches
// the server's files.
func FuzzClassifyPostgres(f *testing.F) {
	for _, s := range []string{
		"select id::text from users", "SELECT x::jsonb ->> 'a' FROM t", "SELECT * FROM u WHERE e ILIKE '%a'",
		"SELECT DISTINCT ON (a) a, b FROM t ORDER BY a", "SELECT setval('s', 1)::text", "SELECT x::int; DROP TABLE t",
		"WITH d AS (DELETE FROM t RETURNING *) SELECT id::text FROM d", "SELECT x::int FROM t FOR UPDATE",
		"SELECT $$a$$::text", "SELECT /*! DROP TABLE t */ x::int FROM t", "SELECT a::numeric(10,2) FROM t",
		"SELECT 'x'::text; SELECT 1::int", "select e'\\''::text",
		// Where MySQL's lexing differs from PostgreSQL's: a backslash in a
		// standard string, # and a -- comment with no space after it.
		"SELECT x::int, 'a\\' ; DELETE FROM t; -- '", "SELECT x::int # 2; DELETE FROM t",
		"SELECT x::int --'\n; DELETE FROM t; -- '", "SELECT x::int /*'*/; DELETE FROM t; -- '",
		"SELECT namE'a\\' ; DELETE FROM t; -- '::text",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r := Classify(text)
		if !r.OK || len(text) > MaxSQL {
			return
		}
		p := pool.Get().(*parser.Parser)
		_, _, err := parse(p, text)
		pool.Put(p)
		if err == nil {
			return // the MySQL grammar read it: not the PostgreSQL path
		}
		if len(r.Effects) != 1 || r.Effects[0] != Read {
			t.Fatalf("Classify(%q) through PostgreSQL's syntax: effects %q, want only read", text, r.Effects)
		}
		for _, st := range r.Statements {
			if len(st.Effects) != 1 || st.Effects[0] != Read {
				t.Fatalf("Classify(%q): statement %q has effects %q", text, st.Text, st.Effects)
			}
		}
		if w := fuzzWrites.FindString(fuzzLiterals.ReplaceAllString(text, "''")); w != "" {
			t.Fatalf("Classify(%q) through PostgreSQL's syntax proved a read that says %q", text, w)
		}
	})
}

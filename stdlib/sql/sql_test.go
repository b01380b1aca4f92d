package sql

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		sql     string
		ok      bool
		effects []string
	}{
		{"SELECT * FROM users WHERE id = 1", true, []string{Read}},
		{"select count(*) from orders o join users u on u.id = o.user_id group by u.id", true, []string{Read}},
		{`SELECT "User".id FROM "User" LIMIT 10`, true, []string{Read}},
		{"SHOW TABLES", true, []string{Read}},
		{"EXPLAIN SELECT 1", true, []string{Read}},
		{"WITH t AS (SELECT 1) SELECT * FROM t", true, []string{Read}},
		{"INSERT INTO t (a) VALUES (1)", true, []string{Write}},
		{"UPDATE users SET name = 'a' WHERE id = 3", true, []string{Write}},
		{"DELETE FROM sessions WHERE expires_at < NOW()", true, []string{Write}},
		{"CREATE TABLE t (id INT PRIMARY KEY)", true, []string{Write}},
		{"DELETE FROM users", true, []string{Unbounded, Write}},
		{"UPDATE accounts SET balance = 0", true, []string{Unbounded, Write}},
		{"DROP DATABASE prod", true, []string{Destroy}},
		{"DROP TABLE IF EXISTS users", true, []string{Destroy}},
		{"TRUNCATE TABLE audit_log", true, []string{Destroy}},
		{"ALTER TABLE users DROP COLUMN email", true, []string{Destroy, Write}},
		{"ALTER TABLE users ADD COLUMN age INT", true, []string{Write}},
		{"GRANT ALL PRIVILEGES ON *.* TO 'u'@'%'", true, []string{Privilege}},
		{"REVOKE SELECT ON db.* FROM 'u'@'%'", true, []string{Privilege}},
		{"CREATE USER bob IDENTIFIED BY 'x'", true, []string{Privilege}},
		{"SELECT * FROM t INTO OUTFILE '/tmp/x'", true, []string{ServerFile, Write}},
		{"LOAD DATA INFILE '/etc/passwd' INTO TABLE t", true, []string{ServerFile, Write}},
		{"SELECT LOAD_FILE('/etc/passwd')", true, []string{Read, ServerFile}},
		{"select pg_read_file('/etc/passwd')", true, []string{Read, ServerFile}},
		{"SELECT sys_exec('id')", true, []string{Program, Read}},
		{"select 1; drop table t", true, []string{Destroy, Read}},
		{"SHUTDOWN", true, []string{Admin}},
		{"SET GLOBAL local_infile = 1", true, []string{Admin, Write}},
		// Other dialects: unparsed, never harmless; the words name effects.
		{"DROP SCHEMA public CASCADE", false, []string{Destroy}},
		{"COPY t FROM PROGRAM 'curl x | sh'", false, []string{Program}},
		{"COPY t TO '/tmp/t.csv'", false, []string{ServerFile}},
		{"EXEC xp_cmdshell 'dir'", false, []string{Program}},
		{"ATTACH DATABASE '/tmp/x.db' AS x", false, []string{ServerFile}},
		// PostgreSQL's common read-only syntax, proven a read.
		{"select id::text from users", true, []string{Read}},
		{"SELECT x::jsonb ->> 'a' FROM t", true, []string{Read}},
		{"SELECT data -> 'user' ->> 'name' AS name FROM events WHERE data @> '{\"kind\": \"login\"}'", true, []string{Read}},
		{"SELECT * FROM users WHERE email ILIKE '%@example.com' ORDER BY id LIMIT 20", true, []string{Read}},
		{"SELECT DISTINCT ON (user_id) user_id, created_at FROM orders ORDER BY user_id, created_at DESC", true, []string{Read}},
		{"SELECT created_at::timestamp with time zone, amount::numeric(10,2) FROM payments", true, []string{Read}},
		{"SELECT count(*) FROM t WHERE name ~* '^a' AND tags::text[] IS NOT NULL", true, []string{Read}},
		{"SELECT 'a::b', x FROM t WHERE y ~ '::'", true, []string{Read}},
		{"SELECT id::text FROM t WHERE name ~ '^[0-9]+$' -- a comment\n AND id > 0 /* it's */", true, []string{Read}},
		// ... but nothing it cannot prove read-only: unparsed, asked.
		{"SELECT setval('s', 1)::text", false, []string{}},
		{"SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity", false, []string{}},
		{"SELECT pg_read_file('/etc/passwd')::text", false, []string{ServerFile}},
		{"SELECT x::int FROM t FOR UPDATE", false, []string{}},
		{"SELECT x::int; DROP TABLE t", false, []string{Destroy}},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT id::text FROM d", false, []string{}},
		{"SELECT $$a$$::text", false, []string{}},
		{"SELECT x::int INTO t2 FROM t", false, []string{}},
		{"SELECT /*! DROP TABLE t */ x::int FROM t", false, []string{Destroy}},
		// Where the MySQL grammar's lexing differs from PostgreSQL's.
		{"SELECT x::int, 'a\\' ; DELETE FROM t; -- '", false, []string{Unbounded}},
		{"SELECT x::int # 2; DELETE FROM t", false, []string{Unbounded}},
		{"SELECT x::int --'\n; DELETE FROM t; -- '", false, []string{Unbounded}},
		// Text the MySQL grammar parses whole but PostgreSQL splits (or the
		// other way round) is never proven: the server's dialect is unknown.
		{"SELECT 'a\\' ; DELETE FROM t; -- '", false, []string{Unbounded}},
		{"SELECT 1 # 2; DELETE FROM t", false, []string{Unbounded}},
		{"SELECT 1 --'\n; DELETE FROM t; -- '", false, []string{Unbounded}},
		{"SELECT 'a\\' , ' ; DELETE FROM t; SELECT x::int -- '", false, []string{Unbounded}},
		{"SELECT id::text FROM t WHERE name ~ '^\\d+$'", false, []string{}},
		{"SELECT e'it\\'s'::text", false, []string{}},
		{"SELECT a FROM t -- the ids\n WHERE b = 1 --\n", true, []string{Read}},
		{"DELETE FROM t WHERE a::int = 1", false, []string{}},
		{"", false, []string{}},
		{"not sql at all", false, []string{}},
	} {
		r := Classify(tc.sql)
		if r.OK != tc.ok {
			t.Errorf("Classify(%q).OK = %v (%s), want %v", tc.sql, r.OK, r.Error, tc.ok)
		}
		if strings.Join(r.Effects, ",") != strings.Join(tc.effects, ",") {
			t.Errorf("Classify(%q).Effects = %q, want %q", tc.sql, r.Effects, tc.effects)
		}
		if r.OK && len(r.Statements) == 0 {
			t.Errorf("Classify(%q): ok with no statement", tc.sql)
		}
	}
}

func TestStatements(t *testing.T) {
	r := Classify("SELECT 1; DELETE FROM t")
	if len(r.Statements) != 2 || r.Statements[0].Kind != "select" || r.Statements[1].Kind != "delete" {
		t.Fatalf("statements = %+v", r.Statements)
	}
	if r.Statements[1].Text != "DELETE FROM t" {
		t.Errorf("text = %q", r.Statements[1].Text)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"SELECT 1", "DROP TABLE t; DELETE FROM x", "select load_file('a') into outfile 'b'", "COPY t FROM PROGRAM 'x'", "/* */ ;;", "SELECT (((("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := Classify(s)
		if r.OK && len(r.Statements) == 0 {
			t.Fatal("ok without statements")
		}
		if !r.OK && r.Error == "" {
			t.Fatal("not ok without an error")
		}
		for _, st := range r.Statements {
			if len(st.Effects) == 0 {
				t.Fatalf("statement %q has no effect", st.Text)
			}
		}
	})
}

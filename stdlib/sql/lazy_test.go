package sql

import (
	"strings"
	"sync"
	"testing"
)

// The PostgreSQL rewrite's regular expressions compile on first use
// (package init runs in every celguard process). This file sorts before
// sql_test.go, so its test is the package's first use: goroutines race to
// it (run with -race), and every one gets the answers TestClassify pins.
func TestLazyRegexpsFirstUseConcurrent(t *testing.T) {
	cases := []struct {
		sql     string
		ok      bool
		effects string
	}{
		{"select id::text from users", true, Read},
		{"SELECT x::jsonb ->> 'a' FROM t", true, Read},
		{"SELECT * FROM users WHERE email ILIKE '%@example.com' ORDER BY id LIMIT 20", true, Read},
		{"SELECT DISTINCT ON (user_id) user_id, created_at FROM orders ORDER BY user_id, created_at DESC", true, Read},
		{"SELECT pg_read_file('/etc/passwd')::text", false, ServerFile},
		{"SELECT x::int; DROP TABLE t", false, Destroy},
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range cases {
				r := Classify(tc.sql)
				if r.OK != tc.ok || strings.Join(r.Effects, ",") != tc.effects {
					t.Errorf("Classify(%q) = ok %v, effects %q; want ok %v, effects %q", tc.sql, r.OK, r.Effects, tc.ok, tc.effects)
				}
			}
		}()
	}
	wg.Wait()
}

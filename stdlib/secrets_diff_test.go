package stdlib

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// refFindSecrets is findSecrets as it was before the one-pass scan of
// the anchors (c2ddc86), verbatim but for its name and refAsciiLower's:
// the text lower-cased, then one strings.Index search of it per anchor.
// It is the oracle of TestFindSecretsDifferential and
// FuzzFindSecretsDifferential: a span it redacts that findSecrets does
// not is a secret left in the audit trail and in session.recent.
func refFindSecrets(text string) []secretFinding {
	if len(text) < 8 {
		return nil
	}
	lower := refAsciiLower(text)
	var all []secretFinding
	for _, p := range secretPatterns {
		for _, a := range p.anchors {
			for off := 0; off < len(lower); {
				j := strings.Index(lower[off:], a)
				if j < 0 {
					break
				}
				i := off + j
				off = i + 1
				if p.bound && i > 0 && isWordByte(text[i-1]) {
					continue
				}
				window := text[i:]
				if p.max > 0 && len(window) > p.max+1 {
					window = window[:p.max+1]
				}
				m := p.re().FindStringSubmatchIndex(window)
				if m == nil {
					continue
				}
				if p.bound && m[1] < len(window) && isWordByte(window[m[1]]) {
					continue
				}
				s, e := m[2*p.group], m[2*p.group+1]
				if s < 0 || e <= s {
					continue
				}
				all = append(all, secretFinding{Kind: p.kind, Start: i + s, End: i + e})
				off = i + m[1]
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Start != all[j].Start {
			return all[i].Start < all[j].Start
		}
		return all[i].End > all[j].End
	})
	out := all[:0]
	end := -1
	for _, f := range all {
		if f.Start < end {
			continue
		}
		out = append(out, f)
		end = f.End
	}
	return out
}

// refAsciiLower lower-cases ASCII letters only, so byte offsets are unchanged.
func refAsciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// sameSecrets fails t unless findSecrets and the reference find the same
// spans of the same kinds in text, and redact it the same.
func sameSecrets(t *testing.T, text string) bool {
	t.Helper()
	got, want := findSecrets(text), refFindSecrets(text)
	if !slices.Equal(got, want) {
		t.Fatalf("findSecrets(%q)\n = %+v\nwant %+v (the reference)", text, got, want)
	}
	if g, w := RedactSecrets(text), redactWith(text, want); g != w {
		t.Fatalf("RedactSecrets(%q) = %q, want %q", text, g, w)
	}
	return len(want) > 0
}

// secretPieces are what randomSecretText joins: every anchor and
// credential shape, their neighbours (word bytes, separators, labels),
// and bytes that are not ASCII.
var secretPieces = []string{
	"AKIA", "akia", "ASIA", "AbIa", "ACCA", "A3T", "a3tX", "IOSFODNN7EXAMPLE", "0123456789ABCDEF",
	"aws", "AWS_SECRET_ACCESS_KEY", "aws_secret_key", "awssecretkey", "=", ":", " = ", "\"", "'",
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG",
	"gh", "ghp_", "gho_", "GHS_", "ghr_", "github_pat_", "GitHub_PAT_", "0123456789abcdefghijABCDEFGHIJ012345",
	"gl", "glpat-", "gldt-", "GLRT-", "glagent-", "abcdefghij0123456789",
	"xox", "xoxb-", "XOXP-", "123456789012-abcdefghij",
	"https://hooks.slack.com/", "HTTPS://HOOKS.SLACK.COM/", "services/", "workflows/T000/B000", "XXXXXXXX",
	"-----BEGIN", "-----begin", " RSA", " OPENSSH", " PRIVATE KEY-----", " PRIVATE KEY BLOCK-----", "\nMIIEow\n",
	"-----END RSA PRIVATE KEY-----", "-----BEGIN%20", "%20PRIVATE%20KEY-----", "%20RSA",
	"authorization", "Authorization", "AUTHORIZATION", "Bearer", "bearer", "BEARER", "Token", "basic", " ",
	"\t", "\n", "abcdefgh", "abcdefghijklmnopqrstuvwxyz", "._~+/-", "==",
	"eyJ", "EYJ", "eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"_", "x", "9", "-", "/", "é", "日本", "\xff", "\x00", "curl -H ", "git push ", "echo ",
}

// randomSecretText joins random pieces, now and then with a random byte
// or a run of word bytes between them, in random case.
func randomSecretText(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.IntN(24); n > 0; n-- {
		switch r.IntN(10) {
		case 0:
			b.WriteByte(byte(r.IntN(256)))
		case 1:
			for m := r.IntN(48); m > 0; m-- {
				b.WriteByte("abcXYZ0189_-/+="[r.IntN(15)])
			}
		default:
			p := secretPieces[r.IntN(len(secretPieces))]
			switch r.IntN(4) {
			case 0:
				p = strings.ToUpper(p)
			case 1:
				p = strings.ToLower(p)
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// TestFindSecretsDifferential holds the one-pass scan to the reference:
// the redaction cases, texts where one anchor's occurrences lie inside
// another's match (the skip after a match), matches that overlap across
// patterns (the later one dropped), and 200,000 random texts made of the
// anchors and credential shapes.
func TestFindSecretsDifferential(t *testing.T) {
	cases := []string{
		"", "1234567", "12345678", "gh", "ghghghghghgh", "glglglgl", "xoxoxoxox",
		"key=AKIAIOSFODNN7EXAMPLE", "key=akiaIOSFODNN7EXAMPLE", "AKIAAKIAIOSFODNN7EXAMPLE", "xAKIAIOSFODNN7EXAMPLE",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYaws_secret_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"token " + testGitHubToken, "token " + strings.ToUpper(testGitHubToken),
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "GITLAB=glpat-abcdefghij0123456789",
		"slack xoxb-123456789012-abcdefghij", "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
		"a\n" + testPrivateKey + "\nb", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow",
		"-----BEGIN%20RSA%20PRIVATE%20KEY-----", "-----begin%20PRIVATE%20KEY-----",
		"jwt=" + testJWT, "Authorization: Bearer abcdef123456", `{"authorization": "Bearer ` + testJWT + `"}`,
		"curl -H 'bearer abcdefghijklmnopqrstuvwxyz'", "nothing here", "AKIA short",
		"é AKIAIOSFODNN7EXAMPLE and " + testGitHubToken,
		// A match of one pattern dropped for overlapping an earlier one,
		// with the same anchor again inside it.
		"Authorization: Bearer bearer.abcdefghijklmnopqrstuvwxyz0123 bearer abcdefghijklmnopqrstuvwxyz",
		"bearer -bearer abcdefghijklmnopqrstuvwxyz-bearer abcdefghijklmnopqrstuvwxyz",
		"-----BEGIN PRIVATE KEY----- -----BEGIN%20PRIVATE%20KEY----- AKIAIOSFODNN7EXAMPLE",
		"eyJabcdef.eyJabcdef.eyJabcdef.eyJabcdef.x " + testJWT + "." + testJWT,
		"ghp_" + strings.Repeat("a", 300) + " ghp_" + strings.Repeat("b", 36),
		"xoxb-" + strings.Repeat("-xoxb-", 60), strings.Repeat("Authorization: token ", 40) + "abcdefgh",
		strings.Repeat("gh", 5000) + testGitHubToken,
	}
	for _, c := range cases {
		sameSecrets(t, c)
	}
	r := rand.New(rand.NewPCG(26, 8))
	found := 0
	for range 200_000 {
		if sameSecrets(t, randomSecretText(r)) {
			found++
		}
	}
	// The texts must hold secrets often, or the comparison says little.
	if found < 5_000 {
		t.Errorf("only %d of the random texts hold a secret", found)
	}
}

// FuzzFindSecretsDifferential: the one-pass scan finds and redacts what
// the reference does, for any text.
func FuzzFindSecretsDifferential(f *testing.F) {
	f.Add("key=AKIAIOSFODNN7EXAMPLE " + testGitHubToken + " " + testJWT)
	f.Add(testPrivateKey)
	f.Add("Authorization: Bearer bearer.abcdefghijklmnopqrstuvwxyz0123 bearer abcdefghijklmnopqrstuvwxyz")
	f.Add("-----BEGIN%20RSA%20PRIVATE%20KEY----- https://hooks.slack.com/services/T000/B000/XXXXXXXX")
	r := rand.New(rand.NewPCG(26, 9))
	for range 32 {
		f.Add(randomSecretText(r))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		sameSecrets(t, s)
	})
}

// TestFindSecretsMemoryBound: the scan keeps no list of the anchors'
// occurrences, so a text that is one anchor after another (a tool's
// output the agent chose) costs no memory of its own: findSecrets
// allocates less than the text's size for a text without a secret. A
// list of every occurrence took 16 bytes an occurrence, some 300 MB
// (with its growth) for a body of 8 MB.
func TestFindSecretsMemoryBound(t *testing.T) {
	for _, tc := range []struct {
		s string
		// matched: every occurrence of the anchor reaches its pattern's
		// regexp, whose pooled machine the race detector's sync.Pool
		// makes again at every match: the bound is not this code's there.
		matched bool
	}{
		{s: strings.Repeat("xo", 1<<19)}, {s: strings.Repeat("gh", 1<<19)}, {s: strings.Repeat("Gl", 1<<19)},
		{s: strings.Repeat("bearer ", 1<<17), matched: true}, {s: strings.Repeat("AWS", 1<<18), matched: true},
	} {
		s := tc.s
		if fs := findSecrets(s); len(fs) != 0 {
			t.Fatalf("findSecrets(%q...) = %d findings, want none", s[:8], len(fs))
		}
		if tc.matched && raceEnabled {
			continue
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		findSecrets(s)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(s)) {
			t.Errorf("findSecrets(%q...) of %d bytes allocated %d bytes", s[:8], len(s), got)
		}
	}
}

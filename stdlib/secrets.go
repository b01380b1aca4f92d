package stdlib

import (
	"cmp"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// SecretFinding is one credential found in a text.
type SecretFinding struct {
	// Kind is one of: private_key, aws_access_key, aws_secret_key,
	// github_token, gitlab_token, slack_token, slack_webhook, jwt,
	// authorization.
	Kind string
	// Start and End are byte offsets of the secret in the text (for
	// authorization headers and aws_secret_key, of the credential only).
	Start, End int
}

type secretFinding = SecretFinding

type secretPattern struct {
	kind string
	// re is anchored (^) at an occurrence of one of the anchors, which are
	// lower-case literals searched case-insensitively; scanning for literals
	// first keeps the cost near that of strings.Index.
	re      func() *regexp.Regexp
	anchors []string
	group   int  // submatch holding the secret (0: whole match)
	max     int  // longest possible match in bytes (0: unbounded)
	bound   bool // the match must not follow or be followed by a word character
}

// lazyRegexp compiles pattern at its first use: compiling the scanner's
// patterns (their bounded repetitions expand) was most of celguard's
// package initialisation, paid by every process, hook events celguard
// ignores among them, and most scans never reach a pattern's anchor.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

var secretPatterns = []secretPattern{
	{kind: "private_key", anchors: []string{"-----begin"},
		re: lazyRegexp(`^-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)`)},
	{kind: "aws_access_key", anchors: []string{"akia", "asia", "abia", "acca", "a3t"}, max: 20, bound: true,
		re: lazyRegexp(`^(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}`)},
	{kind: "aws_secret_key", anchors: []string{"aws"}, group: 1, max: 200,
		re: lazyRegexp(`^(?i:aws_?secret_?(?:access_?)?key)["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`)},
	{kind: "github_token", anchors: []string{"gh", "github_pat_"}, max: 300, bound: true,
		re: lazyRegexp(`^(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})`)},
	{kind: "gitlab_token", anchors: []string{"gl"}, max: 300, bound: true,
		re: lazyRegexp(`^gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas|agent)-[A-Za-z0-9_\-]{20,255}`)},
	{kind: "slack_token", anchors: []string{"xox"}, max: 300, bound: true,
		re: lazyRegexp(`^xox[abposre]-[A-Za-z0-9-]{10,255}`)},
	{kind: "slack_webhook", anchors: []string{"https://hooks.slack.com/"}, max: 300,
		re: lazyRegexp(`^https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+`)},
	{kind: "authorization", anchors: []string{"authorization"}, group: 1, max: 8192,
		re: lazyRegexp(`^(?i:authorization)["']?\s*[:=]\s*["']?(?i:bearer|token|basic)\s+([A-Za-z0-9._~+/=-]{8,})`)},
	{kind: "authorization", anchors: []string{"bearer"}, group: 1, max: 8192, bound: true,
		re: lazyRegexp(`^(?i:bearer)\s+([A-Za-z0-9._~+/-]{20,}=*)`)},
	// A private key's header URL-encoded, as it leaves in a query string.
	{kind: "private_key", anchors: []string{"-----begin%20"},
		re: lazyRegexp(`^-----BEGIN(?:%20[A-Z0-9]+)*%20PRIVATE%20KEY-----`)},
	{kind: "jwt", anchors: []string{"eyj"}, max: 8192, bound: true,
		re: lazyRegexp(`^eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*`)},
}

// FindSecrets returns the credentials in text, in order, without overlaps.
func FindSecrets(text string) []SecretFinding { return findSecrets(text) }

// RedactSecrets replaces each credential in text with [REDACTED:<kind>].
func RedactSecrets(text string) string { return redactWith(text, findSecrets(text)) }

func isWordByte(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// maxSecretAnchors bounds the anchors of secretPatterns (secretAnchors).
const maxSecretAnchors = 32

// anchorTable is every anchor of secretPatterns, numbered in the order
// findSecrets tries them (pattern by pattern, each pattern's anchors in
// order), with the anchors each byte can begin, or come second in, as a
// bit set.
type anchorTable struct {
	n       int
	anchor  [maxSecretAnchors]string // lower case
	pattern [maxSecretAnchors]int    // index in secretPatterns
	first   [256]uint32
	second  [256]uint32
}

// secretAnchors is secretPatterns' anchorTable, made at the first scan.
var secretAnchors = sync.OnceValue(func() *anchorTable {
	t := new(anchorTable)
	for pi, p := range secretPatterns {
		for _, a := range p.anchors {
			if len(a) < 2 || t.n == maxSecretAnchors {
				// Every anchor is at least two bytes (the scan looks at
				// two before comparing) and they fit the bit sets.
				panic("stdlib: secret pattern anchor " + a + " does not fit the anchor table")
			}
			t.anchor[t.n], t.pattern[t.n] = a, pi
			for j, set := range []*[256]uint32{&t.first, &t.second} {
				c := a[j]
				set[c] |= 1 << t.n
				if 'a' <= c && c <= 'z' {
					set[c-('a'-'A')] |= 1 << t.n
				}
			}
			t.n++
		}
	}
	return t
})

// hasFoldedPrefix reports whether s begins with the lower-case anchor a,
// ASCII letters of s compared without case (as asciiLower(s) would begin
// with a).
func hasFoldedPrefix(s, a string) bool {
	if len(s) < len(a) {
		return false
	}
	for j := 0; j < len(a); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != a[j] {
			return false
		}
	}
	return true
}

// anchoredFinding is a finding with the anchor it was found at, which
// orders findings of the same span as one search per anchor, in turn,
// would have listed them.
type anchoredFinding struct {
	secretFinding
	k int
}

// secretScan is findSecrets' scan of text: where each anchor's search
// goes on, and the findings so far.
type secretScan struct {
	text string
	next [maxSecretAnchors]int
	all  []anchoredFinding
}

// try tries pattern p at the occurrence of its anchor k at byte i, as
// one search of the text for the anchor would.
func (sc *secretScan) try(k, i int, p *secretPattern) {
	sc.next[k] = i + 1
	if p.bound && i > 0 && isWordByte(sc.text[i-1]) {
		return
	}
	window := sc.text[i:]
	if p.max > 0 && len(window) > p.max+1 {
		window = window[:p.max+1]
	}
	loc := p.re().FindStringSubmatchIndex(window)
	if loc == nil {
		return
	}
	if p.bound && loc[1] < len(window) && isWordByte(window[loc[1]]) {
		return
	}
	s, e := loc[2*p.group], loc[2*p.group+1]
	if s < 0 || e <= s {
		return
	}
	sc.all = append(sc.all, anchoredFinding{secretFinding{Kind: p.kind, Start: i + s, End: i + e}, k})
	sc.next[k] = i + loc[1]
}

// findSecrets finds the credentials in text. Every occurrence of every
// anchor is found in one pass over the text (the bytes that can begin an
// anchor, then the byte after, then the anchor) and tried at once, as one
// search of the text per anchor would find it: an occurrence inside the
// previous match of the same anchor is skipped. Nothing is kept of an
// occurrence but its finding (TestFindSecretsMemoryBound), and findings
// of the same span are ordered by anchor, as the searches, pattern by
// pattern, listed them. TestFindSecretsDifferential and
// FuzzFindSecretsDifferential hold it to those searches (the previous
// implementation, kept in the test), finding for finding.
func findSecrets(text string) []secretFinding {
	if len(text) < 8 {
		return nil
	}
	tab := secretAnchors()
	sc := secretScan{text: text}
	for i := 0; i+1 < len(text); i++ {
		m := tab.first[text[i]]
		if m == 0 {
			continue
		}
		m &= tab.second[text[i+1]]
		for m != 0 {
			k := bits.TrailingZeros32(m)
			m &= m - 1
			if i >= sc.next[k] && hasFoldedPrefix(text[i:], tab.anchor[k]) {
				sc.try(k, i, &secretPatterns[tab.pattern[k]])
			}
		}
	}
	all := sc.all
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b anchoredFinding) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		if a.End != b.End {
			return cmp.Compare(b.End, a.End)
		}
		return cmp.Compare(a.k, b.k)
	})
	out := make([]secretFinding, 0, len(all))
	end := -1
	for _, f := range all {
		if f.Start < end {
			continue
		}
		out = append(out, f.secretFinding)
		end = f.End
	}
	return out
}

func redactWith(text string, fs []secretFinding) string {
	if len(fs) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, f := range fs {
		b.WriteString(text[last:f.Start])
		b.WriteString("[REDACTED:")
		b.WriteString(f.Kind)
		b.WriteString("]")
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

func findingsToVal(text string, fs []secretFinding) ref.Val {
	out := make([]ref.Val, len(fs))
	runes, at := 0, 0 // code points before byte offset at
	toRunes := func(off int) int {
		runes += utf8.RuneCountInString(text[at:off])
		at = off
		return runes
	}
	for i, f := range fs {
		start := toRunes(f.Start)
		end := toRunes(f.End)
		out[i] = newObj(secretFindingType, secretFindingKeys,
			str(f.Kind), types.Int(start), types.Int(end), str(preview(text[f.Start:f.End])))
	}
	return types.NewRefValList(adapter, out)
}

// preview shows the first four characters of a secret, never more.
func preview(s string) string {
	n := 0
	for i := range s {
		if n == 4 {
			return s[:i] + "****"
		}
		n++
	}
	return "****"
}

// Secrets returns the secrets library (celguard.lib.secrets): find and redact
// common credentials in text, typically a tool's output after the call. The
// kinds are private_key (PEM private key blocks, also unterminated),
// aws_access_key (AKIA..., ASIA...), aws_secret_key (after an
// aws_secret_access_key label), github_token (ghp_, gho_, ghu_, ghs_, ghr_,
// github_pat_), gitlab_token (glpat-, gldt-, glrt-, ...), slack_token (xoxb-,
// xoxp-, ...), slack_webhook, jwt, and authorization (the credential of an
// "Authorization: Bearer|Token|Basic" header, or of a bare "Bearer <token>").
// The scan of a text is memoised per call: find, has and redact share it.
//
// # secrets.find
//
// The credentials in a text, in order: maps with kind, start and end (code
// point offsets, so text.substring(f.start, f.end) is the secret) and a
// preview holding at most the first four characters.
//
//	secrets.find(<string>) -> <list(celguard.secrets.Finding)>
//
// Examples:
//
//	secrets.find("key=AKIAIOSFODNN7EXAMPLE")[0].kind // "aws_access_key"
//	secrets.find("nothing here")                     // []
//
// Introduced in stdlib version 1.
//
// # secrets.has
//
// Reports whether the text holds any credential.
//
//	secrets.has(<string>) -> <bool>
//
// Examples:
//
//	secrets.has("Authorization: Bearer abcdef123456") // true
//
// Introduced in stdlib version 1.
//
// # secrets.redact
//
// The text with each credential replaced by [REDACTED:<kind>].
//
//	secrets.redact(<string>) -> <string>
//
// Examples:
//
//	secrets.redact("token ghp_0123456789abcdefghijABCDEFGHIJ012345") // "token [REDACTED:github_token]"
//
// Introduced in stdlib version 1.
func (l *Lib) Secrets() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "secrets"})
}

// secretsCostPerChar is the cost of scanning one character (see
// BenchmarkSecrets).
const secretsCostPerChar = 0.2

func (l *Lib) secretsFns() []*fnDef {
	c := linearCost(20, 0, secretsCostPerChar)
	s := []*cel.Type{cel.StringType}
	return []*fnDef{
		{ns: "secrets", name: "secrets.find", version: 1, late: true, ovs: []*ovDef{
			{id: "secrets_find_string", args: s, result: cel.ListType(secretFindingType), cost: c},
		}},
		{ns: "secrets", name: "secrets.has", version: 1, late: true, ovs: []*ovDef{
			{id: "secrets_has_string", args: s, result: cel.BoolType, cost: c},
		}},
		{ns: "secrets", name: "secrets.redact", version: 1, late: true, ovs: []*ovDef{
			{id: "secrets_redact_string", args: s, result: cel.StringType, cost: c},
		}},
	}
}

package policy

import (
	"strings"
)

// Closest returns the candidate that name, a misspelling, most likely
// meant: the nearest by edit distance, when it is near enough to be a typo
// (at most a third of name's length, from 1 to 3 edits). It is how
// diagnostics say "did you mean".
func Closest(name string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := EditDistance(name, c)
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	if bestDist <= 0 || bestDist > max(1, min(3, len([]rune(name))/3)) {
		return "", false
	}
	return best, true
}

// EditDistance is the Levenshtein distance between a and b, in runes.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// schemaProperties returns the names of the properties the (sub)schema at
// url's fragment (a JSON pointer) of the schema raw declares.
func schemaProperties(raw []byte, url string) []string {
	_, frag, _ := strings.Cut(url, "#")
	doc, err := decodeSchemaJSON(raw)
	if err != nil {
		return nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[tok]
	}
	m, _ := doc.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	var out []string
	for k := range props {
		out = append(out, k)
	}
	return out
}

package stdlib

import "testing"

// The scanner's patterns are compiled at their first use, not at package
// initialisation; every one of them must compile (a bad pattern would
// otherwise only panic in the scan that first reaches it).
func TestSecretPatternsCompile(t *testing.T) {
	for _, p := range secretPatterns {
		first := p.re()
		if first == nil {
			t.Errorf("%s: no regexp", p.kind)
		}
		if again := p.re(); again != first {
			t.Errorf("%s: compiled more than once", p.kind)
		}
	}
}

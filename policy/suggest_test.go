package policy

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"comands", "commands", 1}, {"kitten", "sitting", 3}, {"é", "e", 1}} {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"verdict", "rule", "code", "reason", "args"}
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"verdit", "verdict", true},
		{"rul", "rule", true},
		{"verdict", "", false}, // not a typo
		{"xyz", "", false},     // nothing near
		{"reasons", "reason", true},
	} {
		got, ok := Closest(tt.name, keys)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Closest(%q) = %q, %v, want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

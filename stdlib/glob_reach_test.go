package stdlib

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestCouldMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"/home/u/.config/celguard/x", "/home/u/.config/celguard", true},
		{"/home/u/.config/celguard", "/home/u/.config/celguard", true},
		{"/home/u/.config", "/home/u/.config/celguard", false}, // an ancestor is not under it
		{"/home/u/.local/stat?/celguard/x", "/home/u/.local/state/celguard", true},
		{"/home/u/.config/celg*/trust.json", "/home/u/.config/celguard/trust.json", true},
		{"/home/u/.config/celg*/trust.json", "/home/u/.config/celguard", true},
		{"/etc/celg[u]ard", "/etc/celguard", true},
		{"/etc/celg[!u]ard", "/etc/celguard", true}, // a negated class may match "/": taken as **
		{"/etc/x/celg[u]ard", "/etc/celguard", false},
		{"/home/u/.cl*/settings.json", "/home/u/.claude/settings.json", true},
		{"/home/u/.cl*/settings.json", "/home/u/.claude/settings.local.json", false},
		{"/home/u/**", "/home/u/.config/celguard", true},
		{"**", "/etc/celguard", true},
		{"/home/u/**/trust.json", "/home/u/.config/celguard/trust.json", true},
		{"/home/u/**/trust.json", "/home/u/.config/celguard", true},
		{"/home/u/**/*.o", "/home/u/.config/celguard", true}, // x.o under it
		{"/home/u/*.o", "/home/u/.config/celguard", false},
		{"/home/u/.config/*.yaml", "/home/u/.config/celguard", false},
		{"/home/u/{.config,.local/state}/celguard/x", "/home/u/.local/state/celguard", true},
		{"/home/u/{.config,.cache}/celguard/x", "/home/u/.local/state/celguard", false},
		{"/home/u/.{con{f,x}ig,y}/celguard", "/home/u/.config/celguard", true},
		{"/srv/app/x", "/home/u/.config/celguard", false},
		{"/srv/app/*", "/srv/app/.celguard", true},
		{"relative/x", "/srv/app/.celguard", false},
		{"/home/user/ddd/a/**", "/root/.config/celguard", false}, // ruled out by the prefix
		// Parentheses: extglob and zsh groups read as "*" within a segment.
		{"/srv/app/console.log(1)", "/srv/app/.celguard", false},
		{"/srv/app/import sys; print(sys.version)", "/srv/app/.celguard", false},
		{"/srv/app/parses (empty) input", "/srv/app/.celguard", false},
		{`/srv/app/require("fs").readFileSync("/etc/hosts")`, "/srv/app/.celguard", false},
		{"/srv/app/.@(celguard)", "/srv/app/.celguard", true},
		{"/srv/app/@(x|.celguard)/y", "/srv/app/.celguard", true},
		{"/srv/app/*(D)", "/srv/app/.celguard", true},
		{"/srv/app/!(src)", "/srv/app/.celguard", true},
		{"/srv/app/(#i).CELGUARD", "/srv/app/.celguard", true}, // zsh's extended operators: taken as **
		{"/srv/app/(x/)#y", "/srv/app/.celguard/p", true},
		{"/srv/app/x[(]1[)]", "/srv/app/.celguard", false}, // escaped: literal
		{"/srv/app/.celguard/x[(]1[)]", "/srv/app/.celguard", true},
		{"/srv/app/a)d", "/srv/app/.celguard", true}, // closes a group of an earlier segment: *d
	} {
		got, err := CouldMatch(tc.pattern, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("CouldMatch(%q, %q) = %v, %v; want %v", tc.pattern, tc.name, got, err, tc.want)
		}
	}
	if _, err := CouldMatch("/etc/[", "/etc"); err == nil {
		t.Error("an invalid pattern is an error")
	}
	if _, err := CouldMatchShell("/etc/[", "/etc"); err == nil {
		t.Error("an invalid pattern is an error")
	}
	// Hostile patterns are bounded, and answer true (fail closed).
	for _, p := range []string{strings.Repeat("{a,b}", 20), strings.Repeat("{a}", 1000), "{" + strings.Repeat("{", 100) + strings.Repeat("}", 100) + "}",
		strings.Repeat("{"+strings.Repeat("x", 1000)+",y}", 9)} {
		if got, err := CouldMatch(p, "/etc/celguard"); err != nil || !got {
			t.Errorf("CouldMatch(%.40q...) = %v, %v; want true", p, got, err)
		}
	}
}

// TestCouldMatchShell: a shell's default globbing skips dot-names unless
// the pattern segment starts with a dot; "**" still spans hidden places.
func TestCouldMatchShell(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"/srv/app/*", "/srv/app/.celguard", false},
		{"/srv/app/*/x.yaml", "/srv/app/.celguard", false},
		{"/srv/app/?celguard", "/srv/app/.celguard", false},
		{"/srv/app/.c*", "/srv/app/.celguard", true},
		{"/srv/app/.*", "/srv/app/.celguard", true},
		{"/srv/app/\\.celguard", "/srv/app/.celguard", true},
		{"/srv/app/[.]celguard", "/srv/app/.celguard", true}, // a class counts as able to
		{"/srv/app/**", "/srv/app/.celguard", true},          // DIR/** of a recursive write
		{"/srv/app/**/*.pyc", "/srv/app/.celguard", true},    // ROOT/**/NAME of find
		{"/srv/app/a**", "/srv/app/.celguard", false},
		{"/home/u/.local/stat?/celguard/x", "/home/u/.local/state/celguard", true},
		{"/home/u/*/celguard", "/home/u/.config/celguard", false},
		{"/home/u/.con*/celg*", "/home/u/.config/celguard", true},
		{"/srv/app/{*,.celguard}", "/srv/app/.celguard", true},
		{"/srv/app/*(D)", "/srv/app/.celguard", true},            // a zsh qualifier: D matches dot-names
		{"/srv/app/(a|.celguard)/x", "/srv/app/.celguard", true}, // zsh alternation
		{"/srv/app/@(a|b)", "/srv/app/.celguard", true},          // extglob, read as a superset
		{"/srv/other/(a|b)", "/srv/app/.celguard", false},        // ruled out by the literal prefix
	} {
		got, err := CouldMatchShell(tc.pattern, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("CouldMatchShell(%q, %q) = %v, %v; want %v", tc.pattern, tc.name, got, err, tc.want)
		}
	}
}

// FuzzCouldMatch: every path doublestar matches is reported, and so are
// all its ancestors (the path lies under them).
func FuzzCouldMatch(f *testing.F) {
	for _, s := range [][2]string{{"/home/u/.config/celg*/trust.json", "/home/u/.config/celguard/trust.json"},
		{"**/x", "/a/b/x"}, {"a/**", "a"}, {"{a,b/c}/*", "b/c/d"}, {"[!a]?/**/z", "bb/q/z"}, {"a\\*b", "a*b"},
		{"/etc/celg[u]ard", "/etc/celguard"}, {"**/.cl*/settings.json", "/h/.claude/settings.json"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 256 || len(name) > 256 || !doublestar.ValidatePattern(pattern) {
			return
		}
		// The shell's default globbing only ever matches less, and the same
		// where no name begins with a dot.
		plain, _ := CouldMatch(pattern, name)
		shellMode, err := CouldMatchShell(pattern, name)
		if err != nil || shellMode && !plain {
			t.Fatalf("CouldMatchShell(%q, %q) = %v, %v with CouldMatch %v", pattern, name, shellMode, err, plain)
		}
		if !strings.HasPrefix(name, ".") && !strings.Contains(name, "/.") && shellMode != plain {
			t.Fatalf("no dot-name in %q, but CouldMatchShell %v != CouldMatch %v for %q", name, shellMode, plain, pattern)
		}
		if !doublestar.MatchUnvalidated(pattern, name) {
			got, err := CouldMatch(pattern, name)
			if err != nil {
				t.Fatalf("CouldMatch(%q, %q): %v for a valid pattern", pattern, name, err)
			}
			_ = got
			return
		}
		for p := name; ; {
			got, err := CouldMatch(pattern, p)
			if err != nil || !got {
				t.Fatalf("doublestar matches %q with %q, but CouldMatch(%q, %q) = %v, %v", name, pattern, pattern, p, got, err)
			}
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
		}
	})
}

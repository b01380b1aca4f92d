package shell

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestFallbackRedirects: in a line that does not parse, the fallback split
// keeps redirection operators and their targets as redirections (FD, Op,
// Target; "?" marks a dynamic target) instead of dropping the operator and
// reading the target as an operand.
func TestFallbackRedirects(t *testing.T) {
	cases := []struct {
		in     string
		argv   []string   // per command, words joined with spaces
		redirs [][]string // per command, "FD Op Target" (FD "-" when none)
	}{
		{"echo x >> ~/.bashrc &&&", []string{"echo x"}, [][]string{{"- >> ~/.bashrc"}}},
		{"echo x>>~/.bashrc ;;", []string{"echo x"}, [][]string{{"- >> ~/.bashrc"}}},
		{"cat a > '/etc/my file' 2>&1 )", []string{"cat a"}, [][]string{{"- > /etc/my file", "2 >& 1"}}},
		{"cmd 2>/dev/null &>> log |&&", []string{"cmd"}, [][]string{{"2 > /dev/null", "- &>> log"}}},
		{"sort <in >|out 'x", []string{"sort x"}, [][]string{{"- < in", "- >| out"}}},
		{"> f; echo 'a", []string{"", "echo a"}, [][]string{{"- > f"}, nil}},
		{"cat <<EOF )", []string{"cat"}, [][]string{{"- << EOF"}}},
		{"cat <<< \"$x\" )", []string{"cat"}, [][]string{{"- <<< ?$x"}}},
		{"echo > ; x )", []string{"echo", "x"}, [][]string{{"- > ?"}, nil}},
		{"echo >$HOME/.profile )", []string{"echo"}, [][]string{{"- > ?$HOME/.profile"}}},
		// A number not right before the operator is a word; a process
		// substitution is not a redirection.
		{"echo 2 > f )", []string{"echo 2"}, [][]string{{"- > f"}}},
		{"diff <(a) >(b) )", []string{"diff", "a", "b"}, [][]string{nil, nil, nil}},
	}
	for _, tc := range cases {
		p := Parse(tc.in)
		if p.OK {
			t.Errorf("%q parsed; want a line that does not parse", tc.in)
			continue
		}
		var argv []string
		var redirs [][]string
		for _, c := range p.Commands {
			if c.Via != "fallback" {
				t.Errorf("%q: command %q via %q, want fallback", tc.in, c.Text, c.Via)
			}
			argv = append(argv, strings.Join(c.Argv, " "))
			var rs []string
			for _, r := range c.Redirects {
				fd, dyn := r.FD, ""
				if fd == "" {
					fd = "-"
				}
				if r.Dynamic {
					dyn = "?"
				}
				rs = append(rs, fmt.Sprintf("%s %s %s%s", fd, r.Op, dyn, r.Target))
			}
			redirs = append(redirs, rs)
		}
		if !reflect.DeepEqual(argv, tc.argv) || !reflect.DeepEqual(redirs, tc.redirs) {
			t.Errorf("%q:\n got argv %q redirs %q\nwant argv %q redirs %q", tc.in, argv, redirs, tc.argv, tc.redirs)
		}
	}
}

// TestFallbackWordsKeepAngles: a value split into words (env -S) is not a
// command line, so < and > only separate words there.
func TestFallbackWordsKeepAngles(t *testing.T) {
	got := wordTexts(fallbackWords("a>b <c"))
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fallbackWords = %q, want %q", got, want)
	}
}

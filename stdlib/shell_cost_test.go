package stdlib

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/stdlib/shell"
)

func TestShellResultSize(t *testing.T) {
	size := func(fn string, n uint64, path ...string) (uint64, bool) {
		est, ok := ShellResultSize(fn, path, n)
		return est.Max, ok
	}
	for _, tt := range []struct {
		fn   string
		path []string
		want uint64
	}{
		{"shell.commands", nil, 501},                        // a;a;a;...
		{"shell.commands", []string{"@items", "args"}, 501}, // a a a ...
		{"shell.commands", []string{"@items", "args", "@items"}, 1000},
		{"shell.commands", []string{"@items", "program"}, 1000},
		{"shell.commands", []string{"@items", "upstream"}, 501},
		{"shell.commands", []string{"@items", "redirects"}, 501 + shell.MaxInheritedRedirects},
		{"shell.commands", []string{"@items", "redirects", "@items", "target"}, 1000},
		{"shell.commands", []string{"@items", "depth"}, 1},
		{"shell.parse", []string{"commands"}, 501},
		{"shell.parse", []string{"commands", "@items", "operands"}, 501},
		{"shell.parse", nil, 6}, // ok, error, opaque, opaque_reasons, commands, programs
		{"shell.parse", []string{"ok"}, 1},
		{"shell.parse", []string{"opaque_reasons"}, 501},
		{"shell.parse", []string{"opaque_reasons", "@items"}, 1000 + shell.MessageExtra},
		{"shell.parse", []string{"programs"}, 501},
		{"shell.programs", nil, 501},
	} {
		got, ok := size(tt.fn, 1000, tt.path...)
		require.True(t, ok, "%s %v", tt.fn, tt.path)
		assert.Equal(t, tt.want, got, "%s %v", tt.fn, tt.path)
	}
	_, ok := size("shell.commands", 1000, "@items", "nonsense")
	assert.False(t, ok)
	_, ok = size("path.normal", 1000)
	assert.False(t, ok)

	// The hard limits: at most shell.MaxCommands commands, and only
	// shell.MaxInput bytes are parsed, even of an input of unknown size.
	got, _ := size("shell.commands", math.MaxUint64)
	assert.Equal(t, uint64(shell.MaxCommands), got)
	got, _ = size("shell.commands", math.MaxUint64, "@items", "args")
	assert.Equal(t, uint64(shell.MaxInput/2+1), got)

	// The bounds hold for real parses, also of strings whose variables
	// expand to more commands or words than the string has bytes for
	// (shell.Parse cuts those down to shell.SizeBounds).
	for _, cmd := range []string{strings.Repeat("a;", 500), "a" + strings.Repeat(" a", 499), strings.Repeat("a|", 499) + "a",
		`x='a;a;a;a;a;a;a;a'; eval $x$x$x$x`, `x='a a a a a a a a'; echo $x $x $x $x`} {
		p := shell.Parse(cmd)
		n := uint64(len(cmd))
		maxCmds, _ := size("shell.commands", n)
		maxArgs, _ := size("shell.commands", n, "@items", "args")
		maxUp, _ := size("shell.commands", n, "@items", "upstream")
		assert.LessOrEqual(t, uint64(len(p.Commands)), maxCmds, cmd)
		for _, c := range p.Commands {
			assert.LessOrEqual(t, uint64(len(c.Args())), maxArgs, cmd)
			assert.LessOrEqual(t, uint64(len(c.Upstream)), maxUp, cmd)
		}
	}
}

func TestShellCommandShare(t *testing.T) {
	share, ok := ShellCommandShare("args", 1000)
	require.True(t, ok)
	assert.Equal(t, uint64(shell.MaxDepth+1), share, "the words of every nesting level")
	_, ok = ShellCommandShare("upstream", 1000)
	assert.False(t, ok, "a|a|a: the sum of upstream is quadratic")
	_, ok = ShellCommandShare("program", 1000)
	assert.False(t, ok)

	// The share times the number of commands bounds the sum over the
	// commands, also for nested scripts that re-read the same words.
	for _, cmd := range []string{
		strings.Repeat("a a;", 250),
		strings.Repeat("eval ", 8) + "a" + strings.Repeat(" a", 450),
		"bash -c 'a b c; bash -c \"d e f; g h\"'",
		`a='a a a a a a a a a a a a a a a a a'; e="echo $a$a$a$a;"; f=$e$e$e$e; g=$f$f$f$f; eval $g`,
	} {
		p := shell.Parse(cmd)
		n := uint64(len(cmd))
		share, _ := ShellCommandShare("args", n)
		cmds, _ := ShellResultSize("shell.commands", nil, n)
		sum := 0
		for _, c := range p.Commands {
			sum += len(c.Args())
		}
		assert.LessOrEqual(t, uint64(sum), cmds.Max*share, cmd)
	}
}

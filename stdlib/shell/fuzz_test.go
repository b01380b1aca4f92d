package shell

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, never hangs, and keeps its invariants on
// any input, among them the Bounds stdlib's cost model relies on.
func FuzzParse(f *testing.F) {
	for _, tc := range shellCases {
		f.Add(tc.in)
	}
	f.Add(deepSubst(40))
	f.Add(strings.Repeat("(", 500) + "ls" + strings.Repeat(")", 500))
	f.Add(strings.Repeat("bash -c '", 20))
	f.Add("eval eval eval eval eval eval eval eval eval eval ls")
	f.Add("env -S 'env -S \"env -S ls\"'")
	for _, in := range overBounds {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<14 {
			return
		}
		// No wall-clock limit here: the fuzzer reports a hang itself, and
		// TestParseAdversarialNesting measures that the work is linear.
		p := Parse(in)
		if p.OK && p.Error != "" || !p.OK && p.Error == "" {
			t.Fatalf("OK %v with error %q", p.OK, p.Error)
		}
		if p.Opaque != (len(p.OpaqueReasons) > 0) {
			t.Fatalf("opaque %v with reasons %q", p.Opaque, p.OpaqueReasons)
		}
		if len(p.Commands) > MaxCommands {
			t.Fatalf("%d commands", len(p.Commands))
		}
		for _, c := range p.Commands {
			checkCommand(t, c)
		}
		checkBounds(t, in, p)
	})
}

// checkCommand checks the invariants of one command and its helpers.
func checkCommand(t *testing.T, c *Command) {
	t.Helper()
	if len(c.Argv) != len(c.ArgvDynamic) {
		t.Fatalf("argv %q vs dynamic %v", c.Argv, c.ArgvDynamic)
	}
	if c.Depth < 0 || c.Depth > MaxDepth {
		t.Fatalf("depth %d", c.Depth)
	}
	if len(c.Argv) > 0 && c.Program != ProgramName(c.Argv[0]) {
		// A dynamic argv[0] names its program only by a literal last
		// component; otherwise the program is argv[0] as written.
		if !c.ArgvDynamic[0] || c.Program != c.Argv[0] && !strings.HasSuffix(c.Argv[0], "/"+c.Program) {
			t.Fatalf("program %q for argv[0] %q", c.Program, c.Argv[0])
		}
	}
	// A command has its own program as prefix and as subcommand spec.
	if len(c.Argv) > 0 && !strings.Contains(c.Program, "/") && slices.Equal(strings.Fields(c.Program), []string{c.Program}) {
		if !c.HasPrefix(c.Program) || !c.HasSubcommand(c.Program) {
			t.Fatalf("%q: HasPrefix/HasSubcommand of its own program %q is false", c.Text, c.Program)
		}
	}
	for _, specs := range [][2]string{{"-r|--recursive", "-f"}, {"-x", "--force"}} {
		if c.HasFlags(specs[0], specs[1]) != (c.HasFlag(specs[0]) && c.HasFlag(specs[1])) {
			t.Fatalf("%q: HasFlags%q disagrees with HasFlag", c.Text, specs)
		}
	}
	// Operands and positionals are subsequences of the arguments (in lower
	// case for a program that reads its command so, leadingCommands).
	args := c.Args()
	folded := args
	if m, ok := leadingCommands()[c.Program]; ok && m.fold {
		folded = make([]string, len(args))
		for i, a := range args {
			folded[i] = strings.ToLower(a)
		}
	}
	if !subsequence(c.Operands(), args) || !subsequence(c.Positionals(), folded) {
		t.Fatalf("%q: operands %q or positionals %q not among args %q", c.Text, c.Operands(), c.Positionals(), args)
	}
	pos := c.Positionals()
	if sub := c.Subcommand(); len(pos) == 0 && sub != "" || len(pos) > 0 && sub != pos[0] {
		t.Fatalf("%q: subcommand %q, positionals %q", c.Text, sub, pos)
	}
}

// subsequence reports whether the elements of sub appear in s in order.
func subsequence(sub, s []string) bool {
	i := 0
	for _, x := range s {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub)
}

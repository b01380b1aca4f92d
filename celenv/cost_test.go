package celenv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/celenv"
)

func TestNeedsCostTracking(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`tool == "Bash" && args.command.matches("rm\\s+-rf")`, false},
		{`has(args.file_path) ? string(args.file_path).startsWith(cwd) : false`, false},
		{`command.lowerAscii().contains("curl") || "shell" in classes`, false},
		{`path.within(path.abs(paths[0], cwd), cwd)`, false},
		{`shell.programs(command).size() > 0`, false},
		{`counters.fails >= 5`, false},
		{`paths.exists(p, p.startsWith("/etc"))`, true},             // comprehension
		{`shell.commands(command).all(c, c.program != "rm")`, true}, // comprehension
		{`lists.range(int(args.n)).size() > 0`, true},               // output sized by an argument
		{`sets.intersects(args.a, args.b)`, true},                   // quadratic
		{`cel.bind(x, args.command, x.size() > 1)`, true},           // bind is a comprehension
	} {
		ast, iss := env.CEL().Compile(tc.expr)
		require.NoError(t, iss.Err(), tc.expr)
		assert.Equal(t, tc.want, celenv.NeedsCostTracking(ast), tc.expr)
	}
}

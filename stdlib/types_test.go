package stdlib

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestResultTypesCheck: the stdlib's results are object types to the
// checker, so a misspelt field or a field of the wrong type is a compile
// error, where a map(string, dyn) let both through to fail every call.
func TestResultTypesCheck(t *testing.T) {
	for _, v := range []uint32{1, LatestVersion} {
		env := testEnv(t, testLib(t, WithVersion(v)))
		bad := []struct{ expr, msg string }{
			{`shell.commands(cmd).exists(c, c.operandz.size() > 0)`, "undefined field 'operandz'"},
			{`shell.commands(cmd).exists(c, c.args == "x")`, "found no matching overload for '_==_' applied to '(list(string), string)'"},
			{`shell.commands(cmd).exists(c, c.depth == "0")`, "'_==_' applied to '(int, string)'"},
			{`shell.commands(cmd).exists(c, c.redirects.exists(r, r.targt == "x"))`, "undefined field 'targt'"},
			{`shell.commands(cmd).exists(c, c.wrappers.exists(w, w.name == "sudo"))`, "undefined field 'name'"},
			{`shell.parse(cmd).okay`, "undefined field 'okay'"},
			{`has(shell.parse(cmd).commandz)`, "undefined field 'commandz'"},
			{`url.parse(cmd).hostname == "x"`, "undefined field 'hostname'"},
			{`url.parse(cmd).query.q == "1"`, "'_==_' applied to '(list(string), string)'"},
			{`secrets.find(text).exists(f, f.type == "jwt")`, "undefined field 'type'"},
			{`shell.commands(cmd)[0].size() > 0`, "found no matching overload for 'size'"},
			{`shell.hasFlag(url.parse(cmd), "-f")`, "found no matching overload for 'shell.hasFlag'"},
			{`celguard.shell.Command{argvv: []}`, "undefined field 'argvv'"},
		}
		for _, tc := range bad {
			_, iss := env.Compile(tc.expr)
			if assert.Error(t, iss.Err(), "version %d: %s", v, tc.expr) {
				assert.Contains(t, iss.Err().Error(), tc.msg, "version %d: %s", v, tc.expr)
			}
		}
	}
}

// TestResultTypesEval: field selection, has(), sizes, comprehensions,
// equality and membership on fields, type(), construction and dyn() all
// evaluate as they did on the maps.
func TestResultTypesEval(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	cases := []struct {
		expr, cmd string
		want      bool
	}{
		{`shell.commands(cmd).exists(c, c.operands.size() > 0)`, "rm x", true},
		{`shell.commands(cmd).exists(c, c.operands.size() > 0)`, "ls", false},
		{`shell.commands(cmd).exists(c, has(c.operands) && has(c.env) && has(c.redirects))`, "ls", true},
		{`shell.commands(cmd)[0].args.size() == 2`, "git push origin", true},
		{`shell.commands(cmd).map(c, c.program) == ["cd", "git"]`, "cd x && git push", true},
		{`shell.commands(cmd).all(c, c.redirects.all(r, r.op == ">" && r.target == "out" && !r.dynamic && r.fd == ""))`, "echo x > out", true},
		{`shell.commands(cmd).exists(c, c.wrappers.exists(w, w.program == "sudo" && "-u" in w.argv))`, "sudo -u root rm x", true},
		{`"push" in shell.commands(cmd)[0].args && shell.commands(cmd)[0].subcommand == "push"`, "git push", true},
		{`shell.commands(cmd)[0].env == {"A": "1"} && shell.commands(cmd)[0].depth == 0`, "A=1 ls", true},
		{`shell.commands(cmd)[0] == shell.commands(cmd)[0]`, "ls", true},
		{`shell.commands(cmd)[0] in shell.commands(cmd)`, "ls", true},
		{`shell.parse(cmd).ok && has(shell.parse(cmd).opaque) && shell.parse(cmd).programs == ["ls"]`, "ls", true},
		{`shell.parse(cmd).commands.exists(c, c.program == "ls")`, "ls", true},
		{`type(shell.commands(cmd)[0]) == celguard.shell.Command`, "ls", true},
		{`type(shell.parse(cmd)) == celguard.shell.Parse`, "ls", true},
		{`type(shell.commands(cmd)[0].redirects[0]) == celguard.shell.Redirect`, "ls > x", true},
		{`type(shell.commands(cmd)[0].wrappers[0]) == celguard.shell.Wrapper`, "sudo ls", true},
		{`type(url.parse(cmd)) == celguard.url.URL && url.parse(cmd).host == "a.io" && url.parse(cmd).query.q == ["1"]`, "https://a.io/?q=1", true},
		{`secrets.find(cmd).exists(f, type(f) == celguard.secrets.Finding && f.kind == "aws_access_key" && f.start == 4)`, "key=AKIAIOSFODNN7EXAMPLE", true},
		{`dyn(shell.parse(cmd)) == {"ok": true, "error": "", "opaque": false, "opaque_reasons": [], "commands": shell.commands(cmd), "programs": ["ls"]}`, "ls", true},
		{`dyn(shell.commands(cmd)[0].wrappers[0]) == {"program": "sudo", "argv": ["sudo"]}`, "sudo ls", true},
		{`dyn(url.parse(cmd)).all(k, k != "hostname") && dyn(url.parse(cmd)).exists_one(k, k == "host")`, "x", true},
		// A command built in CEL is typed too, and the helpers read it.
		{`shell.hasFlag(celguard.shell.Command{argv: ["rm", "-rf", "/"]}, "-r")`, "", true},
		{`celguard.shell.Command{program: "rm"}.args == [] && !celguard.shell.Command{}.dynamic`, "", true},
		{`"out" in shell.writes(shell.commands(cmd)[0])`, "cp in out", true},
		// A map still works where a command is expected.
		{`shell.hasPrefix({"argv": ["git", "log"]}, ["git log"])`, "", true},
	}
	for _, tc := range cases {
		got := evalIn(t, env, l.NewCallScope(), tc.expr, map[string]any{"cmd": tc.cmd})
		assert.Equal(t, types.Bool(tc.want), got, "%s with cmd=%q", tc.expr, tc.cmd)
	}
}

// TestResultTypesNative: a result converts to JSON as the map it was.
func TestResultTypesNative(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	v := evalIn(t, env, l.NewCallScope(), `url.parse("https://a.io:8/p?q=1")`, nil)
	native, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	require.NoError(t, err)
	b, err := protojson.Marshal(native.(*structpb.Value))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":true,"error":"","scheme":"https","user":"","host":"a.io","port":"8","path":"/p","raw_query":"q=1","query":{"q":["1"]},"fragment":""}`, string(b))
}

// TestResultTypesProvider: an environment that already has the types keeps
// its provider, and the declared fields are the documented ones.
func TestResultTypesProvider(t *testing.T) {
	l := testLib(t)
	env, err := cel.NewEnv(l.EnvOptions()...)
	require.NoError(t, err)
	ext, err := env.Extend(resultTypesOption())
	require.NoError(t, err)
	p := ext.CELTypeProvider()
	_, wrapped := p.(typeProvider)
	assert.True(t, wrapped)
	assert.False(t, func() bool { _, ok := p.(typeProvider).Provider.(typeProvider); return ok }(), "wrapped twice")
	names, ok := p.FindStructFieldNames(ShellCommandTypeName)
	require.True(t, ok)
	var doc []string
	for _, f := range ResultTypes()[1].Fields {
		doc = append(doc, f.Name)
	}
	assert.ElementsMatch(t, doc, names)
	assert.Equal(t, strings.Join(doc, ","), strings.Join(commandKeys, ","), "the command's fields are its keys, in order")
	_, ok = p.FindStructType("celguard.shell.Nope")
	assert.False(t, ok)
}

// TestResultTypesDocumented: docs/stdlib.md has a table for every declared
// type, with a row per field giving its type as the checker has it.
func TestResultTypesDocumented(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "stdlib.md"))
	require.NoError(t, err)
	doc := string(md)
	for _, rt := range ResultTypes() {
		i := strings.Index(doc, "\n`"+rt.Name+"`, ")
		if !assert.GreaterOrEqual(t, i, 0, "docs/stdlib.md introduces no table for %s", rt.Name) {
			continue
		}
		table := doc[i:]
		table = table[strings.Index(table, "\n| field"):]
		if end := strings.Index(table, "\n\n"); end >= 0 {
			table = table[:end]
		}
		for _, f := range rt.Fields {
			assert.Contains(t, table, "\n| `"+f.Name+"` | "+f.Type.String()+" | ", "%s.%s", rt.Name, f.Name)
			assert.NotEmpty(t, f.Doc, "%s.%s", rt.Name, f.Name)
		}
		assert.Equal(t, len(rt.Fields)+2, strings.Count(table, "\n|"), "%s: the table has exactly the declared fields", rt.Name)
	}
}

// TestResultTypesWithProtoTypes: an embedder's proto types declared after
// the stdlib (celenv.WithLibrary(cel.Types(...))) still register.
func TestResultTypesWithProtoTypes(t *testing.T) {
	l := testLib(t)
	env, err := cel.NewEnv(append(l.EnvOptions(), cel.Types(&exprpb.SourceInfo{}))...)
	require.NoError(t, err)
	for _, src := range []string{`google.api.expr.v1alpha1.SourceInfo{location: "p.yaml"}.location == "p.yaml"`, `url.parse("x").host == "x"`} {
		_, iss := env.Compile(src)
		assert.NoError(t, iss.Err(), src)
	}
}

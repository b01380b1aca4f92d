package stdlib

import (
	"sort"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// The declared types of the stdlib's results. The checker sees them as CEL
// object types, so c.operandz (a typo) or c.args == "x" (a type mismatch) is
// a compile error at its position; at run time the values stay the lazy,
// memoised maps the functions build (a field select is a map lookup).
const (
	// ShellParseTypeName is the type of shell.parse.
	ShellParseTypeName = "celguard.shell.Parse"
	// ShellCommandTypeName is the type of an element of shell.commands.
	ShellCommandTypeName = "celguard.shell.Command"
	// ShellRedirectTypeName is the type of an element of a command's redirects.
	ShellRedirectTypeName = "celguard.shell.Redirect"
	// ShellWrapperTypeName is the type of an element of a command's wrappers.
	ShellWrapperTypeName = "celguard.shell.Wrapper"
	// URLTypeName is the type of url.parse.
	URLTypeName = "celguard.url.URL"
	// SecretFindingTypeName is the type of an element of secrets.find.
	SecretFindingTypeName = "celguard.secrets.Finding"
)

var (
	shellParseType    = cel.ObjectType(ShellParseTypeName)
	shellCommandType  = cel.ObjectType(ShellCommandTypeName)
	shellRedirectType = cel.ObjectType(ShellRedirectTypeName)
	shellWrapperType  = cel.ObjectType(ShellWrapperTypeName)
	urlType           = cel.ObjectType(URLTypeName)
	secretFindingType = cel.ObjectType(SecretFindingTypeName)
)

// Field is one field of a declared result type.
type Field struct {
	Name string
	Type *cel.Type
	Doc  string
}

// ResultType is a declared result type: its name and fields, in
// documentation order.
type ResultType struct {
	Name   string
	Fields []Field
}

// resultTypes are the declared result types, in documentation order.
var resultTypes = []ResultType{
	{ShellParseTypeName, []Field{
		{"ok", cel.BoolType, "false when the string is not valid bash; commands is then a best-effort split"},
		{"error", cel.StringType, `the parse error, "" when ok`},
		{"opaque", cel.BoolType, "some code runs that cannot be seen ($CMD, bash -c \"$X\", eval \"$X\", too deep)"},
		{"opaque_reasons", listString, "why opaque is set"},
		{"commands", cel.ListType(shellCommandType), "every simple command"},
		{"programs", listString, "the program of every command, in order"},
	}},
	{ShellCommandTypeName, []Field{
		{"program", cel.StringType, "basename of argv[0] after wrappers: \"git\" for sudo /usr/bin/git"},
		{"path", cel.StringType, "argv[0] as written, quotes removed"},
		{"argv", listString, "words after the wrappers, quotes removed, argv[0] included"},
		{"args", listString, "argv without argv[0]"},
		{"argv_dynamic", cel.ListType(cel.BoolType), "parallel to argv: the word is not a literal ($VAR, $(...))"},
		{"dynamic", cel.BoolType, "any word of argv is not a literal"},
		{"operands", listString, "args that are not options (all words after --)"},
		{"positionals", listString, "like operands, also skipping values of known global options (git -c k=v)"},
		{"subcommand", cel.StringType, `positionals[0] or ""`},
		{"env", cel.MapType(cel.StringType, cel.StringType), "leading NAME=value assignments (also those given to env/sudo)"},
		{"redirects", cel.ListType(shellRedirectType), "the command's redirections"},
		{"wrappers", cel.ListType(shellWrapperType), "sudo, env, timeout, ... stripped to reach program"},
		{"depth", cel.IntType, "0 at top level, +1 per $( ), ` `, <( ), bash -c, eval, find -exec"},
		{"via", cel.StringType, `"", "$()", "<()", ">()", "-c", "eval", "find -exec", "<<" or "fallback"`},
		{"upstream", listString, "programs of the earlier stages of its pipeline (curl x | sh: [\"curl\"])"},
		{"background", cel.BoolType, "run with &"},
		{"text", cel.StringType, "the command's source text"},
	}},
	{ShellRedirectTypeName, []Field{
		{"op", cel.StringType, "> >> < << <<< &> >& ..."},
		{"fd", cel.StringType, `the file descriptor as written ("" when implicit)`},
		{"target", cel.StringType, "the file (or descriptor) redirected to or from, quotes removed"},
		{"dynamic", cel.BoolType, "the target is not a literal"},
		{"body", cel.StringType, "a here-document's or here-string's text"},
	}},
	{ShellWrapperTypeName, []Field{
		{"program", cel.StringType, "the wrapper's program: sudo, env, timeout, xargs, bash -c, find -exec ..."},
		{"argv", listString, "the wrapper's own words"},
	}},
	{URLTypeName, []Field{
		{"ok", cel.BoolType, "false when the string is not a URL"},
		{"error", cel.StringType, `the parse error, "" when ok`},
		{"scheme", cel.StringType, "lower-case"},
		{"user", cel.StringType, "the user name of the userinfo"},
		{"host", cel.StringType, "lower-case, no trailing dot, no brackets"},
		{"port", cel.StringType, `"" when absent`},
		{"path", cel.StringType, "the decoded path"},
		{"raw_query", cel.StringType, "the query as written, without ?"},
		{"query", cel.MapType(cel.StringType, listString), "each query parameter's values"},
		{"fragment", cel.StringType, "after #"},
	}},
	{SecretFindingTypeName, []Field{
		{"kind", cel.StringType, "aws_access_key, github_token, jwt, private_key ..."},
		{"start", cel.IntType, "offset of the secret, in code points"},
		{"end", cel.IntType, "offset after the secret, in code points"},
		{"preview", cel.StringType, "the first four characters of the secret, never more"},
	}},
}

// ResultTypes returns the declared result types of the stdlib's functions,
// in documentation order.
func ResultTypes() []ResultType {
	out := make([]ResultType, len(resultTypes))
	copy(out, resultTypes)
	return out
}

// resultTypeIndex maps a type name to its fields by name.
var resultTypeIndex = func() map[string]map[string]*types.FieldType {
	m := make(map[string]map[string]*types.FieldType, len(resultTypes))
	for _, rt := range resultTypes {
		fs := make(map[string]*types.FieldType, len(rt.Fields))
		for _, f := range rt.Fields {
			fs[f.Name] = &types.FieldType{Type: f.Type}
		}
		m[rt.Name] = fs
	}
	return m
}()

// typeProvider answers for the declared result types and passes every other
// question to the environment's own provider.
type typeProvider struct {
	types.Provider
}

// FindStructType implements types.Provider.
func (p typeProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := resultTypeIndex[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

// FindIdent implements types.Provider: a type's name is its type value.
func (p typeProvider) FindIdent(name string) (ref.Val, bool) {
	if _, ok := resultTypeIndex[name]; ok {
		return types.NewObjectType(name), true
	}
	return p.Provider.FindIdent(name)
}

// FindStructFieldNames implements types.Provider.
func (p typeProvider) FindStructFieldNames(name string) ([]string, bool) {
	if fs, ok := resultTypeIndex[name]; ok {
		names := make([]string, 0, len(fs))
		for n := range fs {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider. The field types carry no
// accessors: the interpreter then reads a field as a map key, which is what
// the values are.
func (p typeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if fs, ok := resultTypeIndex[name]; ok {
		ft, ok := fs[field]
		return ft, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}

// NewValue implements types.Provider. The result types are built by the
// stdlib only: a CEL expression cannot construct one.
func (p typeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := resultTypeIndex[name]; ok {
		return types.NewErr("%s cannot be constructed in an expression", name)
	}
	return p.Provider.NewValue(name, fields)
}

// resultTypesOption declares the result types to the environment's checker
// by wrapping its type provider. It is idempotent: a provider that already
// knows the types is kept.
func resultTypesOption() cel.EnvOption {
	return func(e *cel.Env) (*cel.Env, error) {
		cur := e.CELTypeProvider()
		if _, ok := cur.(typeProvider); ok {
			return e, nil
		}
		return cel.CustomTypeProvider(typeProvider{Provider: cur})(e)
	}
}

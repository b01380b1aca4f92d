package stdlib

import (
	"fmt"
	"reflect"
	"sort"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"google.golang.org/protobuf/reflect/protoreflect"
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
	// ToolchainAnalysisTypeName is the type of toolchain.analyze.
	ToolchainAnalysisTypeName = "celguard.toolchain.Analysis"
	// ToolchainFileTypeName is the type of an element of toolchain.files.
	ToolchainFileTypeName = "celguard.toolchain.File"
	// SQLResultTypeName is the type of sql.classify.
	SQLResultTypeName = "celguard.sql.Result"
)

var (
	shellParseType        = cel.ObjectType(ShellParseTypeName)
	shellCommandType      = cel.ObjectType(ShellCommandTypeName)
	shellRedirectType     = cel.ObjectType(ShellRedirectTypeName)
	shellWrapperType      = cel.ObjectType(ShellWrapperTypeName)
	urlType               = cel.ObjectType(URLTypeName)
	secretFindingType     = cel.ObjectType(SecretFindingTypeName)
	toolchainAnalysisType = cel.ObjectType(ToolchainAnalysisTypeName)
	toolchainFileType     = cel.ObjectType(ToolchainFileTypeName)
	sqlResultType         = cel.ObjectType(SQLResultTypeName)
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
		{"positionals", listString, "like operands, also skipping values of known global options (git -c k=v); az and gcloud: their command's leading words (az's in lower case)"},
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
	{ToolchainAnalysisTypeName, []Field{
		{"runs", cel.BoolType, "a toolchain runs or loads the file; the other fields are empty when not"},
		{"family", cel.StringType, `the file's family in the table of docs/policies.md ("make", "npm-package", ...)`},
		{"ecosystem", cel.StringType, `"make", "node", "rust", "python", "go", "git", "ci", "agent", ...`},
		{"run_by", cel.StringType, "who runs the file, and when"},
		{"commands", listString, "the shell commands the content holds, to judge as direct commands"},
		{"uses", listString, "code the content pulls in by reference: actions, hook repositories, features, images"},
		{"unproven", listString, "why the content cannot be proven safe by its commands (program code, no parse, ...)"},
	}},
	{ToolchainFileTypeName, []Field{
		{"path", cel.StringType, "the file's path as the call writes it"},
		{"content", cel.StringType, "what the call writes into it (an edit's new text, a patch's added lines)"},
		{"edit", cel.BoolType, "the content is a part of the file (an edit, a patch): read it with toolchain.analyzeEdit"},
	}},
	{SQLResultTypeName, []Field{
		{"ok", cel.BoolType, "false when the text does not parse (never harmless then)"},
		{"error", cel.StringType, `the parse error, "" when ok`},
		{"effects", listString, "read, write, destroy, unbounded, privilege, server_file, program, admin: the union, sorted"},
		{"kinds", listString, `each statement's type: "select", "droptable", "delete", ...`},
		{"statements", listString, "each statement's text"},
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

// NewValue implements types.Provider: celguard.shell.Command{argv: [...]}
// builds a value of a result type, its unset fields zero (the checker has
// checked the names and types of the set ones).
func (p typeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	for _, rt := range resultTypes {
		if rt.Name != name {
			continue
		}
		keys := make([]ref.Val, len(rt.Fields))
		vals := make([]ref.Val, len(rt.Fields))
		for i, f := range rt.Fields {
			keys[i] = types.String(f.Name)
			if v, ok := fields[f.Name]; ok {
				vals[i] = v
			} else {
				vals[i] = zeroOf(f.Type)
			}
		}
		return &objVal{t: types.NewObjectType(name), keys: keys, vals: vals}
	}
	return p.Provider.NewValue(name, fields)
}

// zeroOf is the zero value of a field type.
func zeroOf(t *types.Type) ref.Val {
	switch t.Kind() {
	case types.BoolKind:
		return types.False
	case types.IntKind:
		return types.IntZero
	case types.StringKind:
		return types.String("")
	case types.MapKind:
		return types.NewRefValMap(adapter, map[ref.Val]ref.Val{})
	default:
		return types.NewRefValList(adapter, []ref.Val{})
	}
}

// RegisterDescriptor lets cel.Types (proto messages) after the stdlib reach
// the wrapped provider when it is a registry.
func (p typeProvider) RegisterDescriptor(fd protoreflect.FileDescriptor) error {
	reg, ok := p.Provider.(interface {
		RegisterDescriptor(protoreflect.FileDescriptor) error
	})
	if !ok {
		return fmt.Errorf("stdlib: the type provider %T does not register types", p.Provider)
	}
	return reg.RegisterDescriptor(fd)
}

// RegisterType lets cel.Types (CEL types) after the stdlib reach the
// wrapped provider when it is a registry.
func (p typeProvider) RegisterType(ts ...ref.Type) error {
	reg, ok := p.Provider.(interface{ RegisterType(...ref.Type) error })
	if !ok {
		return fmt.Errorf("stdlib: the type provider %T does not register types", p.Provider)
	}
	return reg.RegisterType(ts...)
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

// objVal is the run-time value of a declared result type other than a
// command: its fields in declaration order, read by name as a map is, so
// the interpreter's field selection and has() work unchanged, while type()
// reports the declared type.
type objVal struct {
	t    *types.Type
	keys []ref.Val // the type's field names, shared
	vals []ref.Val // parallel to keys
	// memo marks a value a CallScope returned before (memoised).
	memo bool
}

var _ traits.Mapper = (*objVal)(nil)

// fieldKeys returns the field names of a declared type as CEL strings, made
// once per type.
func fieldKeys(name string) []ref.Val {
	for _, rt := range resultTypes {
		if rt.Name == name {
			out := make([]ref.Val, len(rt.Fields))
			for i, f := range rt.Fields {
				out[i] = types.String(f.Name)
			}
			return out
		}
	}
	panic("stdlib: no result type " + name)
}

var (
	shellParseKeys        = fieldKeys(ShellParseTypeName)
	shellRedirectKeys     = fieldKeys(ShellRedirectTypeName)
	shellWrapperKeys      = fieldKeys(ShellWrapperTypeName)
	urlKeys               = fieldKeys(URLTypeName)
	secretFindingKeys     = fieldKeys(SecretFindingTypeName)
	toolchainAnalysisKeys = fieldKeys(ToolchainAnalysisTypeName)
	toolchainFileKeys     = fieldKeys(ToolchainFileTypeName)
	sqlResultKeys         = fieldKeys(SQLResultTypeName)
)

// newObj returns a value of type t with the values of its fields, in
// declaration order.
func newObj(t *types.Type, keys []ref.Val, vals ...ref.Val) ref.Val {
	if len(vals) != len(keys) {
		panic("stdlib: " + t.TypeName() + ": wrong number of fields")
	}
	return &objVal{t: t, keys: keys, vals: vals}
}

// Find implements traits.Mapper.
func (v *objVal) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	for i, name := range v.keys {
		if name.(types.String) == k {
			return v.vals[i], true
		}
	}
	return nil, false
}

// Get implements traits.Indexer.
func (v *objVal) Get(key ref.Val) ref.Val { return getByFind(v, key) }

// Contains implements traits.Container.
func (v *objVal) Contains(key ref.Val) ref.Val { return containsByFind(v, key) }

// finder is the Find of a traits.Mapper.
type finder interface {
	Find(key ref.Val) (ref.Val, bool)
}

// getByFind is traits.Indexer's Get in terms of Find.
func getByFind(m finder, key ref.Val) ref.Val {
	if val, found := m.Find(key); found {
		return val
	}
	return types.NewErr("no such key: %v", key)
}

// containsByFind is traits.Container's Contains in terms of Find.
func containsByFind(m finder, key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

// Size implements traits.Sizer.
func (v *objVal) Size() ref.Val { return types.Int(len(v.keys)) }

// IsSet implements traits.FieldTester: every field of a result is set.
func (v *objVal) IsSet(field ref.Val) ref.Val { return containsByFind(v, field) }

// Iterator implements traits.Iterable: the field names, in order.
func (v *objVal) Iterator() traits.Iterator { return &keyIterator{keys: v.keys} }

// mapVal is the value as a plain CEL map, for the rare operations that need
// one (equality, conversion).
func (v *objVal) mapVal() traits.Mapper {
	m := make(map[ref.Val]ref.Val, len(v.keys))
	for i, k := range v.keys {
		m[k] = v.vals[i]
	}
	return types.NewRefValMap(adapter, m)
}

// ConvertToNative implements ref.Val.
func (v *objVal) ConvertToNative(t reflect.Type) (any, error) { return v.mapVal().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (v *objVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return v.t
	}
	return v.mapVal().ConvertToType(t)
}

// Equal implements ref.Val.
func (v *objVal) Equal(other ref.Val) ref.Val { return v.mapVal().Equal(other) }

// Type implements ref.Val.
func (v *objVal) Type() ref.Type { return v.t }

// Value implements ref.Val.
func (v *objVal) Value() any { return v.mapVal().Value() }

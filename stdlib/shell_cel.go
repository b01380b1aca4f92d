package stdlib

import (
	"errors"
	"reflect"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/celguard/celguard/stdlib/shell"
)

// Shell returns the shell library (celguard.lib.shell): a parsed view of a
// bash command string, so rules never match a command line with a regex.
//
// A parse is a celguard.shell.Parse (see ResultTypes) with these fields:
//
//	ok             bool          false when the string is not valid bash; commands is then a best-effort split
//	error          string        the parse error, "" when ok
//	opaque         bool          some code runs that cannot be seen ($CMD, bash -c "$X", eval "$X", too deep)
//	opaque_reasons list(string)  why opaque is set
//	commands       list(map)     every simple command, see below
//	programs       list(string)  the program of every command, in order
//
// A command is a celguard.shell.Command with these fields:
//
//	program      string             basename of argv[0] after wrappers: "git" for sudo /usr/bin/git;
//	                                for a non-literal argv[0], argv[0] as written ("$(echo rm)")
//	                                unless its last path component is literal ("$X"/bin/rm: "rm")
//	path         string             argv[0] as written, quotes removed
//	argv         list(string)       words after the wrappers, quotes removed, argv[0] included
//	args         list(string)       argv without argv[0]
//	argv_dynamic list(bool)         parallel to argv: the word is not a literal ($VAR, $(...))
//	dynamic      bool               any word of argv is not a literal
//	operands     list(string)       args that are not options (all words after --)
//	positionals  list(string)       like operands, also skipping values of known global options (git -c k=v); az and gcloud: their command's leading words (az's in lower case)
//	subcommand   string             positionals[0] or ""
//	env          map(string,string) leading NAME=value assignments (also those given to env/sudo)
//	redirects    list(map)          {op, fd, target, dynamic, body}: op is > >> < << <<< &> >& ...
//	wrappers     list(map)          {program, argv}: sudo, env, timeout, nice, nohup, time, command, xargs,
//	                                exec, ... stripped to reach program, then bash -c / find -exec that run it
//	depth        int                0 at top level, +1 per $( ), ` `, <( ), bash -c, eval, find -exec
//	via          string             "", "$()", "<()", ">()", "-c", "eval", "find -exec", "<<" or "fallback"
//	upstream     list(string)       programs of the earlier stages of its pipeline (curl x | sh: ["curl"])
//	background   bool               run with &
//	text         string             the command's source text
//
// # shell.parse
//
// Parses a command string as bash. Never an error: a string that does not
// parse has ok == false. Memoised per call (one parse however many rules ask).
//
//	shell.parse(<string>) -> <celguard.shell.Parse>
//
// Examples:
//
//	shell.parse("cd x && git push").programs         // ["cd", "git"]
//	shell.parse("echo 'a && b'").commands.size()      // 1
//	shell.parse("echo &&& x").ok                      // false
//
// Introduced in stdlib version 1.
//
// # shell.commands
//
// The commands of shell.parse(cmd).
//
//	shell.commands(<string>) -> <list(celguard.shell.Command)>
//
// Examples:
//
//	shell.commands("sudo -u root rm -rf /").exists(c, c.program == "rm") // true
//	shell.commands("bash -c 'git push'")[1].program                      // "git"
//
// Introduced in stdlib version 1.
//
// # shell.programs
//
// The programs of shell.parse(cmd), in order.
//
//	shell.programs(<string>) -> <list(string)>
//
// Examples:
//
//	shell.programs("FOO=1 /usr/bin/git status | less") // ["git", "less"]
//	"curl" in shell.programs("echo $(curl x)")        // true
//
// Introduced in stdlib version 1.
//
// # shell.hasFlag
//
// Reports whether a command has a flag. The flag may list alternatives
// separated by "|". A one-letter short flag matches inside combined short
// flags (-rf, -fr, -Rf); "--long" matches --long and --long=value; other
// specs match the word exactly. Only words before "--" count.
//
//	shell.hasFlag(<celguard.shell.Command>, <string>) -> <bool>
//	shell.hasFlag(<map(string, dyn)>, <string>) -> <bool>
//
// Examples:
//
//	shell.hasFlag(shell.commands("rm -fr x")[0], "-r|-R|--recursive")  // true
//	shell.hasFlag(shell.commands("git push --force=1")[0], "--force") // true
//	shell.hasFlag(shell.commands("rm -- -r")[0], "-r")               // false
//
// Introduced in stdlib version 1.
//
// # shell.hasFlags
//
// Reports whether a command has every flag of the list (each may list
// alternatives, as for shell.hasFlag).
//
//	shell.hasFlags(<celguard.shell.Command>, <list(string)>) -> <bool>
//	shell.hasFlags(<map(string, dyn)>, <list(string)>) -> <bool>
//
// Examples:
//
//	shell.hasFlags(shell.commands("rm -Rf /")[0], ["-r|-R", "-f"])            // true
//	shell.hasFlags(shell.commands("rm --recursive x")[0], ["-r|--recursive", "-f|--force"]) // false
//
// Introduced in stdlib version 1.
//
// # shell.hasPrefix
//
// Reports whether a command's words start with the given words, compared
// whole, so "git log" matches git log -p but not git logout. The first word
// is compared with program (with path when it contains "/"). With a list,
// any prefix may match. Options are not skipped: see shell.hasSubcommand.
//
//	shell.hasPrefix(<celguard.shell.Command>, <string>) -> <bool>
//	shell.hasPrefix(<celguard.shell.Command>, <list(string)>) -> <bool>
//	shell.hasPrefix(<map(string, dyn)>, <string>) -> <bool>
//	shell.hasPrefix(<map(string, dyn)>, <list(string)>) -> <bool>
//
// Examples:
//
//	shell.hasPrefix(shell.commands("/usr/bin/git log -p")[0], "git log") // true
//	shell.hasPrefix(shell.commands("git logout")[0], "git log")          // false
//	shell.hasPrefix(shell.commands("ls -la")[0], ["ls", "pwd"])          // true
//
// Introduced in stdlib version 1.
//
// # shell.hasSubcommand
//
// Reports whether a command runs the given subcommand, skipping options and
// the values of known global options anywhere before it: "git push" matches
// git -c k=v push, git --git-dir=x push and git -C dir push. With a list,
// any may match.
//
//	shell.hasSubcommand(<celguard.shell.Command>, <string>) -> <bool>
//	shell.hasSubcommand(<celguard.shell.Command>, <list(string)>) -> <bool>
//	shell.hasSubcommand(<map(string, dyn)>, <string>) -> <bool>
//	shell.hasSubcommand(<map(string, dyn)>, <list(string)>) -> <bool>
//
// Examples:
//
//	shell.hasSubcommand(shell.commands("git -c a=b push")[0], "git push")              // true
//	shell.hasSubcommand(shell.commands("kubectl -n p delete pod x")[0], "kubectl delete") // true
//
// Introduced in stdlib version 1.
func (l *Lib) Shell() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "shell"})
}

var (
	mapStrDyn  = cel.MapType(cel.StringType, cel.DynType)
	listString = cel.ListType(cel.StringType)
)

func (l *Lib) shellFns() []*fnDef {
	parseCost := linearCost(40, 0, shellParseCostPerByte)
	commandsCost, programsCost := parseCost, parseCost
	parseCost.result = shellResult("shell.parse") // shell_cost.go
	commandsCost.result = shellResult("shell.commands")
	programsCost.result = shellResult("shell.programs")
	return []*fnDef{
		{ns: "shell", name: "shell.parse", version: 1, late: true, ovs: []*ovDef{
			{id: "shell_parse_string", args: []*cel.Type{cel.StringType}, result: shellParseType, cost: parseCost},
		}},
		{ns: "shell", name: "shell.commands", version: 1, late: true, ovs: []*ovDef{
			{id: "shell_commands_string", args: []*cel.Type{cel.StringType}, result: cel.ListType(shellCommandType), cost: commandsCost},
		}},
		{ns: "shell", name: "shell.programs", version: 1, late: true, ovs: []*ovDef{
			{id: "shell_programs_string", args: []*cel.Type{cel.StringType}, result: listString, cost: programsCost},
		}},
		{ns: "shell", name: "shell.hasFlag", version: 1, ovs: []*ovDef{
			{id: "shell_hasFlag_command_string", args: []*cel.Type{shellCommandType, cel.StringType}, result: cel.BoolType,
				binary: shellHasFlag, cost: linearCost(10, 1, 0.1)},
			{id: "shell_hasFlag_map_string", args: []*cel.Type{mapStrDyn, cel.StringType}, result: cel.BoolType,
				binary: shellHasFlag, cost: linearCost(10, 1, 0.1)},
		}},
		{ns: "shell", name: "shell.hasFlags", version: 1, ovs: []*ovDef{
			{id: "shell_hasFlags_command_list", args: []*cel.Type{shellCommandType, listString}, result: cel.BoolType,
				binary: shellHasFlags, cost: linearCost(5, 1, 10)},
			{id: "shell_hasFlags_map_list", args: []*cel.Type{mapStrDyn, listString}, result: cel.BoolType,
				binary: shellHasFlags, cost: linearCost(5, 1, 10)},
		}},
		{ns: "shell", name: "shell.hasPrefix", version: 1, ovs: []*ovDef{
			{id: "shell_hasPrefix_command_string", args: []*cel.Type{shellCommandType, cel.StringType}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasPrefix), cost: linearCost(5, 1, 0.1)},
			{id: "shell_hasPrefix_command_list", args: []*cel.Type{shellCommandType, listString}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasPrefix), cost: linearCost(5, 1, 5)},
			{id: "shell_hasPrefix_map_string", args: []*cel.Type{mapStrDyn, cel.StringType}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasPrefix), cost: linearCost(5, 1, 0.1)},
			{id: "shell_hasPrefix_map_list", args: []*cel.Type{mapStrDyn, listString}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasPrefix), cost: linearCost(5, 1, 5)},
		}},
		{ns: "shell", name: "shell.hasSubcommand", version: 1, ovs: []*ovDef{
			{id: "shell_hasSubcommand_command_string", args: []*cel.Type{shellCommandType, cel.StringType}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasSubcommand), cost: linearCost(10, 1, 0.1)},
			{id: "shell_hasSubcommand_command_list", args: []*cel.Type{shellCommandType, listString}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasSubcommand), cost: linearCost(10, 1, 10)},
			{id: "shell_hasSubcommand_map_string", args: []*cel.Type{mapStrDyn, cel.StringType}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasSubcommand), cost: linearCost(10, 1, 0.1)},
			{id: "shell_hasSubcommand_map_list", args: []*cel.Type{mapStrDyn, listString}, result: cel.BoolType,
				binary: shellMatcher((*shell.Command).HasSubcommand), cost: linearCost(10, 1, 10)},
		}},
	}
}

// shellParseCostPerByte is the cost of parsing one byte of a command, in
// cel-go units (about 50ns each); see BenchmarkShellParse.
const shellParseCostPerByte = 3.0

func shellHasFlag(cv, spec ref.Val) ref.Val {
	c, err := commandFromVal(cv)
	if err != nil {
		return err
	}
	s, ok := spec.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(spec)
	}
	return types.Bool(c.HasFlag(string(s)))
}

func shellHasFlags(cv, specs ref.Val) ref.Val {
	c, err := commandFromVal(cv)
	if err != nil {
		return err
	}
	list, lerr := stringList(specs)
	if lerr != nil {
		return lerr
	}
	return types.Bool(c.HasFlags(list...))
}

// shellMatcher adapts a string predicate of a command to the string and
// list(string) (any of) overloads.
func shellMatcher(f func(*shell.Command, string) bool) func(ref.Val, ref.Val) ref.Val {
	return func(cv, arg ref.Val) ref.Val {
		c, err := commandFromVal(cv)
		if err != nil {
			return err
		}
		if s, ok := arg.(types.String); ok {
			return types.Bool(f(c, string(s)))
		}
		// A list of Go strings (toolchain.runners, a variable's list
		// literal converted once) is read in place, not copied.
		if list, native := arg.Value().([]string); native {
			for _, s := range list {
				if f(c, s) {
					return types.True
				}
			}
			return types.False
		}
		return anyListString(arg, func(s string) bool { return f(c, s) })
	}
}

// anyListString reports whether f holds for a string of the CEL list v,
// read in place: what stringList(v) and a loop over its result answer,
// the same error included (a list with an element that is not a string is
// an error even when an earlier element holds), without copying the list
// (a list literal of a rule is a list of CEL values, converted at every
// call before).
func anyListString(v ref.Val, f func(string) bool) ref.Val {
	l, ok := v.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	n, _ := l.Size().(types.Int)
	for i := types.Int(0); i < n; i++ {
		if _, ok := l.Get(i).(types.String); !ok {
			return types.NewErr("expected a list of strings, got an element of type %s", l.Get(i).Type())
		}
	}
	for i := types.Int(0); i < n; i++ {
		if f(string(l.Get(i).(types.String))) {
			return types.True
		}
	}
	return types.False
}

func stringList(v ref.Val) ([]string, ref.Val) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(v)
	}
	n, _ := l.Size().(types.Int)
	out := make([]string, 0, int(n))
	for i := types.Int(0); i < n; i++ {
		s, ok := l.Get(i).(types.String)
		if !ok {
			return nil, types.NewErr("expected a list of strings, got an element of type %s", l.Get(i).Type())
		}
		out = append(out, string(s))
	}
	return out, nil
}

// commandVal is the CEL value of a shell.Command: a celguard.shell.Command
// to the checker and read like a map(string, dyn) by the interpreter, whose
// fields are computed from the Go value when read, so a parse of a long
// script costs nothing for the fields no rule looks at. The helpers take the
// Go value back without decoding the map.
type commandVal struct {
	cmd  *shell.Command
	once sync.Once
	full traits.Mapper // materialised for iteration, equality and conversion
	// vals memoises each field's value: ten rules reading c.args of the
	// same command build the list once. A commandVal lives in one call's
	// CallScope, used by one goroutine at a time.
	vals [len(commandKeyList)]ref.Val
	// writes memoises shell.writes of the command.
	writes ref.Val
}

var _ traits.Mapper = (*commandVal)(nil)

// commandKeyList are the keys of a command map, in documentation order.
var commandKeyList = [...]string{"program", "path", "argv", "args", "argv_dynamic", "dynamic", "operands",
	"positionals", "subcommand", "env", "redirects", "wrappers", "depth", "via", "upstream", "background", "text"}

// commandKeys is commandKeyList as a slice.
var commandKeys = commandKeyList[:]

// commandKeyVals are the keys as CEL strings, made once.
var commandKeyVals = func() (out [len(commandKeyList)]ref.Val) {
	for i, k := range commandKeyList {
		out[i] = types.String(k)
	}
	return out
}()

// commandKeyIndex maps a key to its place in commandKeyList.
var commandKeyIndex = func() map[string]int {
	m := make(map[string]int, len(commandKeyList))
	for i, k := range commandKeyList {
		m[k] = i
	}
	return m
}()

// field returns a field's value, computed once per command.
func (v *commandVal) field(key string) (ref.Val, bool) {
	i, ok := commandKeyIndex[key]
	if !ok {
		return nil, false
	}
	if val := v.vals[i]; val != nil {
		return val, true
	}
	val, ok := v.computeField(key)
	if ok {
		v.vals[i] = val
	}
	return val, ok
}

func (v *commandVal) computeField(key string) (ref.Val, bool) {
	c := v.cmd
	switch key {
	case "program":
		return str(c.Program), true
	case "path":
		return str(c.Path), true
	case "argv":
		return types.NewStringList(adapter, c.Argv), true
	case "args":
		args := c.Args()
		if args == nil {
			args = []string{}
		}
		return types.NewStringList(adapter, args), true
	case "argv_dynamic":
		dyn := make([]ref.Val, len(c.ArgvDynamic))
		for i, d := range c.ArgvDynamic {
			dyn[i] = types.Bool(d)
		}
		return types.NewRefValList(adapter, dyn), true
	case "dynamic":
		return types.Bool(c.Dynamic()), true
	case "operands":
		return types.NewStringList(adapter, c.Operands()), true
	case "positionals":
		return types.NewStringList(adapter, c.Positionals()), true
	case "subcommand":
		return str(c.Subcommand()), true
	case "env":
		env := c.Env
		if env == nil {
			env = map[string]string{}
		}
		return types.NewStringStringMap(adapter, env), true
	case "redirects":
		redirs := make([]ref.Val, len(c.Redirects))
		for i, r := range c.Redirects {
			redirs[i] = newObj(shellRedirectType, shellRedirectKeys,
				str(r.Op), str(r.FD), str(r.Target), types.Bool(r.Dynamic), str(r.Body))
		}
		return types.NewRefValList(adapter, redirs), true
	case "wrappers":
		wrappers := make([]ref.Val, len(c.Wrappers))
		for i, w := range c.Wrappers {
			wrappers[i] = newObj(shellWrapperType, shellWrapperKeys,
				str(w.Program), types.NewStringList(adapter, w.Argv))
		}
		return types.NewRefValList(adapter, wrappers), true
	case "depth":
		return types.Int(c.Depth), true
	case "via":
		return str(c.Via), true
	case "upstream":
		up := c.Upstream
		if up == nil {
			up = []string{}
		}
		return types.NewStringList(adapter, up), true
	case "background":
		return types.Bool(c.Background), true
	case "text":
		return str(c.Text), true
	}
	return nil, false
}

func (v *commandVal) mapVal() traits.Mapper {
	v.once.Do(func() {
		m := make(map[ref.Val]ref.Val, len(commandKeys))
		for i, k := range commandKeys {
			m[commandKeyVals[i]], _ = v.field(k)
		}
		v.full = types.NewRefValMap(adapter, m)
	})
	return v.full
}

// Find implements traits.Mapper.
func (v *commandVal) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return v.field(string(k))
}

// Get implements traits.Mapper.
func (v *commandVal) Get(key ref.Val) ref.Val { return getByFind(v, key) }

// Contains implements traits.Container.
func (v *commandVal) Contains(key ref.Val) ref.Val { return containsByFind(v, key) }

// Size implements traits.Sizer.
func (v *commandVal) Size() ref.Val { return types.Int(len(commandKeys)) }

// Iterator implements traits.Iterable. It walks the keys without computing
// the fields: cel-go's runtime type guard on a map(string, dyn) argument
// (shell.hasFlag(c, ...)) reads the first key and its value only.
func (v *commandVal) Iterator() traits.Iterator { return &keyIterator{keys: commandKeyVals[:]} }

// keyIterator iterates over the keys of a command or other result value,
// in declaration order.
type keyIterator struct {
	keys []ref.Val
	i    int
}

var _ traits.Iterator = (*keyIterator)(nil)

// HasNext implements traits.Iterator.
func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

// Next implements traits.Iterator.
func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return k
}

// ConvertToNative implements ref.Val.
func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("type conversion on iterators not supported")
}

// ConvertToType implements ref.Val.
func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("no such overload")
}

// Equal implements ref.Val.
func (it *keyIterator) Equal(ref.Val) ref.Val { return types.NewErr("no such overload") }

// Type implements ref.Val.
func (it *keyIterator) Type() ref.Type { return types.IteratorType }

// Value implements ref.Val.
func (it *keyIterator) Value() any { return nil }

// ConvertToNative implements ref.Val.
func (v *commandVal) ConvertToNative(t reflect.Type) (any, error) {
	return v.mapVal().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (v *commandVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return shellCommandType
	}
	return v.mapVal().ConvertToType(t)
}

// Equal implements ref.Val.
func (v *commandVal) Equal(other ref.Val) ref.Val { return v.mapVal().Equal(other) }

// Type implements ref.Val.
func (v *commandVal) Type() ref.Type { return shellCommandType }

// Value implements ref.Val.
func (v *commandVal) Value() any { return v.mapVal().Value() }

// commandFromVal recovers the shell.Command behind a command map. A map built
// in CEL is accepted too: argv (and optionally program, path, argv_dynamic)
// are read from it.
func commandFromVal(v ref.Val) (*shell.Command, ref.Val) {
	if cv, ok := v.(*commandVal); ok {
		return cv.cmd, nil
	}
	m, ok := v.(traits.Mapper)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(v)
	}
	c := &shell.Command{}
	if av, found := m.Find(types.String("argv")); found {
		argv, err := stringList(av)
		if err != nil {
			return nil, err
		}
		c.Argv = argv
	}
	if dv, found := m.Find(types.String("argv_dynamic")); found {
		if l, ok := dv.(traits.Lister); ok {
			n, _ := l.Size().(types.Int)
			for i := types.Int(0); i < n; i++ {
				b, _ := l.Get(i).(types.Bool)
				c.ArgvDynamic = append(c.ArgvDynamic, bool(b))
			}
		}
	}
	if len(c.Argv) > 0 {
		c.Path = c.Argv[0]
		c.Program = shell.ProgramName(c.Argv[0])
	}
	if pv, found := m.Find(types.String("path")); found {
		if s, ok := pv.(types.String); ok {
			c.Path = string(s)
		}
	}
	if pv, found := m.Find(types.String("program")); found {
		if s, ok := pv.(types.String); ok {
			c.Program = string(s)
		}
	}
	return c, nil
}

var adapter = types.DefaultTypeAdapter

func str(s string) ref.Val { return types.String(s) }

func parseToVal(p *shell.Line) (parse, commands, programs ref.Val) {
	cmds := make([]ref.Val, len(p.Commands))
	for i, c := range p.Commands {
		cmds[i] = commandToVal(c)
	}
	commands = types.NewRefValList(adapter, cmds)
	programs = types.NewStringList(adapter, p.Programs())
	reasons := p.OpaqueReasons
	if reasons == nil {
		reasons = []string{}
	}
	parse = newObj(shellParseType, shellParseKeys,
		types.Bool(p.OK), str(p.Error), types.Bool(p.Opaque), types.NewStringList(adapter, reasons), commands, programs)
	return parse, commands, programs
}

func commandToVal(c *shell.Command) ref.Val { return &commandVal{cmd: c} }

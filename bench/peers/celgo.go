package peers

import (
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/celguard/celguard/eval"
)

// celRule is one rule as a raw cel-go user would write it: the tool test
// inside the expression.
type celRule struct {
	id, verdict, expr string
}

const (
	bashTool  = `tool == "Bash" && `
	writeTool = `(tool == "Write" || tool == "Edit") && `
	cmdExpr   = `(has(args.command) ? string(args.command) : "")`
	fpathExpr = `(has(args.file_path) ? string(args.file_path) : "")`
)

// celRules are the 20 rules in priority order (ties in file order).
var celRules = []celRule{
	{"deny-rm-root", "block", bashTool + cmdExpr + `.matches(r"rm\s+-[a-zA-Z]*r[a-zA-Z]*\s+/(\s|$)")`},
	{"deny-mkfs", "block", bashTool + cmdExpr + `.matches(r"\bmkfs(\.[a-z0-9]+)?\b")`},
	{"deny-dd-dev", "block", bashTool + cmdExpr + `.matches(r"\bdd\b.*\bof=/dev/")`},
	{"deny-fork-bomb", "block", bashTool + cmdExpr + `.matches(r":\(\)\s*\{\s*:\|:&\s*\};:")`},
	{"deny-chmod-777-root", "block", bashTool + cmdExpr + `.matches(r"chmod\s+-R\s+777\s+/(\s|$)")`},
	{"deny-curl-sh", "block", bashTool + cmdExpr + `.matches(r"(curl|wget)[^|]*\|\s*(ba|z)?sh\b")`},
	{"deny-write-env", "block", writeTool + fpathExpr + `.matches(r"(^|/)\.env(\.[a-z]+)?$") && !` + fpathExpr + `.endsWith(".env.example")`},
	{"deny-write-ssh", "block", writeTool + fpathExpr + `.matches(r"(^|/)\.ssh/")`},
	{"deny-write-keys", "block", writeTool + fpathExpr + `.matches(r"\.(pem|key)$")`},
	{"ask-write-outside", "ask", writeTool + `!` + fpathExpr + `.startsWith(cwd + "/")`},
	{"ask-sudo", "ask", bashTool + cmdExpr + `.matches(r"(^|[;&|]\s*)sudo\s")`},
	{"ask-force-push", "ask", bashTool + cmdExpr + `.matches(r"git\s+push\s+.*(--force|-f)\b")`},
	{"ask-reset-hard", "ask", bashTool + cmdExpr + `.matches(r"git\s+reset\s+--hard")`},
	{"ask-no-verify", "ask", bashTool + cmdExpr + `.matches(r"git\s+commit\s+.*--no-verify")`},
	{"ask-npm-publish", "ask", bashTool + cmdExpr + `.matches(r"npm\s+publish")`},
	{"ask-docker", "ask", bashTool + cmdExpr + `.matches(r"docker\s+(run|exec)")`},
	{"allow-safe-read", "allow", `tool in ["Read", "Glob", "Grep"]`},
	{"allow-git-read", "allow", bashTool + cmdExpr + `.matches(r"^git\s+(status|log|diff|show|branch)\b")`},
	{"allow-build", "allow", bashTool + cmdExpr + `.matches(r"^(go\s+(build|test|vet)|npm\s+test|make)\b")`},
	{"allow-ls", "allow", bashTool + cmdExpr + `.matches(r"^(ls|cat|head|tail|wc|pwd|echo)\b")`},
}

// CelGo is the policy as raw cel-go: one program per rule, every rule tried
// in order for every call (no tool index), one activation reused from call
// to call (a struct whose fields are the call's, set per call: no map and
// no allocation to build it), shared by the 20 programs. Not safe for
// concurrent use, like the other peers.
type CelGo struct {
	prgs []cel.Program
	act  callActivation
}

// callActivation resolves tool, args and cwd from the current call.
type callActivation struct {
	tool, cwd types.String
	args      ref.Val
}

// ResolveName implements interpreter.Activation.
func (a *callActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "tool":
		return a.tool, true
	case "args":
		return a.args, true
	case "cwd":
		return a.cwd, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *callActivation) Parent() interpreter.Activation { return nil }

// NewCelGo builds the environment and the 20 programs. The programs are
// planned with cel.OptOptimize, which among other things compiles constant
// regex patterns once, when the program is built; without it cel-go compiles
// the pattern of every matches() call at every evaluation, which is no fair
// baseline (about 8x slower on this stream).
func NewCelGo() (*CelGo, error) {
	env, err := cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("cwd", cel.StringType),
	)
	if err != nil {
		return nil, err
	}
	g := &CelGo{}
	for _, r := range celRules {
		ast, iss := env.Compile(r.expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("%s: %w", r.id, iss.Err())
		}
		prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.id, err)
		}
		g.prgs = append(g.prgs, prg)
	}
	return g, nil
}

// Decide implements Decider. A rule whose evaluation fails blocks (fail
// closed, as celguard does); none does on this stream.
func (g *CelGo) Decide(c eval.Call) (string, string) {
	g.act.tool, g.act.cwd = types.String(c.Tool), types.String(c.Cwd)
	g.act.args = types.DefaultTypeAdapter.NativeToValue(c.Args)
	for i, prg := range g.prgs {
		out, _, err := prg.Eval(&g.act)
		if err != nil {
			return "block", celRules[i].id
		}
		if out == types.True {
			return celRules[i].verdict, celRules[i].id
		}
	}
	return "allow", ""
}

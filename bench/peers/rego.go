package peers

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/celguard/celguard/eval"
)

// regoPolicy is the policy in Rego (bench.rego).
//
//go:embed bench.rego
var regoPolicy string

// Rego is the policy in OPA: the query prepared once, evaluated per call.
type Rego struct {
	pq rego.PreparedEvalQuery
}

// NewRego parses, compiles and prepares the query.
func NewRego(ctx context.Context) (*Rego, error) {
	pq, err := rego.New(
		rego.Query("data.celguard.bench.decision"),
		rego.Module("bench.rego", regoPolicy),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	return &Rego{pq: pq}, nil
}

// Decide implements Decider. An evaluation error blocks.
func (r *Rego) Decide(c eval.Call) (string, string) {
	input := map[string]any{"tool": c.Tool, "args": c.Args, "cwd": c.Cwd}
	rs, err := r.pq.Eval(context.Background(), rego.EvalInput(input))
	if err != nil || len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return "block", fmt.Sprintf("rego error: %v", err)
	}
	d, ok := rs[0].Expressions[0].Value.([]any)
	if !ok || len(d) != 4 {
		return "block", fmt.Sprintf("rego decision %v", rs[0].Expressions[0].Value)
	}
	rule, _ := d[2].(string)
	verdict, _ := d[3].(string)
	return verdict, rule
}

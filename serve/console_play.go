package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// Bounds of the playground. It compiles and runs what the operator pastes
// on the server, so what it accepts is bounded: the sizes here, the
// compiler's bounds (compile.DefaultMaxRules, the proven cost of every
// expression) and the engine's, one run at a time, each within
// PlaygroundTimeout. It never touches the server's own state: every
// run compiles its own set into a throwaway engine, with no store, no
// decision log, no telemetry, no judge and no approver, and decides in a
// fresh session. It compiles with the default CEL environment, whose
// path.abs does not resolve symbolic links: nothing a playground policy
// runs reads the server's files.
const (
	// MaxPlaygroundPolicy bounds the policy pasted, in bytes.
	MaxPlaygroundPolicy = 64 << 10
	// MaxPlaygroundCall bounds the call pasted, in bytes.
	MaxPlaygroundCall = 16 << 10
	// PlaygroundTimeout bounds one run: compiling and linting the policy
	// (with the built-in bundle, the lint analyses take about a second)
	// and deciding the call. It is longer than a decision's --timeout:
	// the playground runs one policy at a time, for an operator.
	PlaygroundTimeout = 30 * time.Second
	// playgroundFile is the file name the pasted policy compiles as.
	playgroundFile = "playground.yaml"
)

// playInput is what the playground decides.
type playInput struct {
	Policy  string
	Call    string
	Builtin bool
}

// playResult is what it found.
type playResult struct {
	Ran         bool
	Diagnostics []playDiag
	Decision    *eval.Decision
	Explanation *eval.Explanation
	DecisionDoc string
	Error       string
}

// playDiag is a diagnostic as the playground shows it.
type playDiag struct {
	policy.Diagnostic
	Mine bool // in the pasted policy (not a built-in file)
}

// playData is the playground page.
type playData struct {
	In       playInput
	Out      *playResult
	Recorded []recordedCall
	Limits   string
}

// recordedCall is a recent call the operator can pick.
type recordedCall struct {
	Label string
	JSON  string
}

// examplePolicy is the playground's policy when none is given.
const examplePolicy = `name: example
rules:
  - id: no-force-push
    tools: [Bash]
    condition: args.command.contains("push") && args.command.contains("--force")
    verdict: block
    reason: force-pushing rewrites shared history
`

const exampleCall = `{"tool": "Bash", "args": {"command": "git push --force origin main"}, "cwd": "/home/dev/repo"}`

func (s *Server) consolePlayground(w http.ResponseWriter, r *http.Request) {
	d := playData{In: playInput{Policy: examplePolicy, Call: exampleCall, Builtin: false},
		Limits: fmt.Sprintf("policy up to %d KiB, call up to %d KiB, %d rules, %s", MaxPlaygroundPolicy>>10, MaxPlaygroundCall>>10, compile.DefaultMaxRules, PlaygroundTimeout)}
	for _, rec := range s.console.feed.find(decisionFilter{}, 50, false) {
		if !rec.Phase.HasCall() || rec.Tool == "" {
			continue
		}
		c := map[string]any{"tool": rec.Tool}
		if rec.Args != nil {
			c["args"] = rec.Args
		}
		b, err := json.Marshal(c)
		if err != nil {
			continue
		}
		label := fmt.Sprintf("%s %s: %s", rec.Time.UTC().Format("15:04:05"), rec.Verdict, rec.Tool)
		if !slices.ContainsFunc(d.Recorded, func(x recordedCall) bool { return x.JSON == string(b) }) {
			d.Recorded = append(d.Recorded, recordedCall{Label: label, JSON: string(b)})
		}
	}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		d.In = playInput{Policy: r.PostFormValue("policy"), Call: r.PostFormValue("call"), Builtin: r.PostFormValue("builtin") == "on"}
		out, code, err := s.play(r.Context(), d.In)
		if err != nil {
			status = code
			out = &playResult{Error: err.Error()}
		}
		d.Out = out
	}
	s.render(w, r, status, "playground.html", page{Title: "Playground", Nav: "playground", Data: d})
}

// errBusy is the playground's answer while another run is going.
var errBusy = errors.New("the playground is running another policy: try again in a moment")

// play compiles in.Policy (with the built-in bundle when in.Builtin) with
// the lint analyses and, when it compiles, decides in.Call in a throwaway
// engine with the explanation. Its error is about the input (with the
// HTTP status to answer), never a policy's problem, which is a diagnostic.
func (s *Server) play(ctx context.Context, in playInput) (*playResult, int, error) {
	if len(in.Policy) > MaxPlaygroundPolicy {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the policy is %d bytes, more than the playground's %d", len(in.Policy), MaxPlaygroundPolicy)
	}
	if len(in.Call) > MaxPlaygroundCall {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the call is %d bytes, more than the playground's %d", len(in.Call), MaxPlaygroundCall)
	}
	var call eval.Call
	dec := json.NewDecoder(bytes.NewReader([]byte(in.Call)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&call); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf(`the call is not a JSON call {"tool", "args", "cwd"}: %v`, err)
	}
	if msg := checkCall(&call); msg != "" {
		return nil, http.StatusBadRequest, errors.New(msg)
	}
	select {
	case s.console.play <- struct{}{}:
	default:
		return nil, http.StatusTooManyRequests, errBusy
	}
	ctx, cancel := context.WithTimeout(ctx, PlaygroundTimeout)
	defer cancel()
	done := make(chan *playResult, 1)
	go func() {
		defer func() { <-s.console.play }()
		defer func() {
			if p := recover(); p != nil {
				done <- &playResult{Error: fmt.Sprintf("internal error: %v", p)}
			}
		}()
		done <- runPlayground(ctx, in, call)
	}()
	select {
	case out := <-done:
		return out, http.StatusOK, nil
	case <-ctx.Done():
		return nil, http.StatusServiceUnavailable, fmt.Errorf("no result within %s: the policy or the call is too costly for the playground", PlaygroundTimeout)
	}
}

// playgroundSources are the pasted policy, with the recommended built-in
// bundle or with the built-in tool classes alone.
func playgroundSources(in playInput) ([]policy.Source, error) {
	mine := policy.Source{Name: playgroundFile, Data: []byte(in.Policy), Layer: policy.LayerExplicit}
	if !in.Builtin {
		return []policy.Source{mine, policies.ToolClasses()}, nil
	}
	all, err := policies.Sources()
	if err != nil {
		return nil, err
	}
	keep := policies.Bundles()[policies.BundleRecommended]
	var srcs []policy.Source
	for _, src := range all {
		name := strings.TrimSuffix(path.Base(src.Name), ".yaml")
		if slices.Contains(keep, name) {
			srcs = append(srcs, src)
		}
	}
	return append(srcs, mine, policies.ToolClasses()), nil
}

func runPlayground(ctx context.Context, in playInput, call eval.Call) *playResult {
	out := &playResult{}
	srcs, err := playgroundSources(in)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	set, ds, err := compile.Check(srcs)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for _, d := range ds.Unsuppressed() {
		out.Diagnostics = append(out.Diagnostics, playDiag{Diagnostic: d, Mine: d.Pos.File == playgroundFile})
	}
	if set == nil || ctx.Err() != nil {
		return out
	}
	eng, err := eval.New(set)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	var x eval.Explanation
	d, err := eng.NewSession("playground", nil).Before(ctx, call, eval.WithExplain(&x))
	if err != nil && d.Verdict == policy.VerdictUnspecified {
		out.Error = err.Error()
		return out
	}
	out.Ran, out.Decision, out.Explanation = true, &d, &x
	out.DecisionDoc = formatJSON(d)
	return out
}

// ---- the policy view

// policyData is the policy page.
type policyData struct {
	Digest   string
	LoadedAt time.Time
	Layers   []layerView
	Bundles  []bundleView
	Project  *projectView
	Findings int
	LintErr  string
}

type layerView struct {
	Name     string
	Digest   string
	Policies []policyView
}

type policyView struct {
	Name      string
	File      string
	Untrusted bool
	Monitored bool
	Bundle    string
	Rules     []ruleView
}

type ruleView struct {
	ID        string
	Pos       string
	Phase     string
	Verdict   string
	Mandatory bool
	Reason    string
	Shadowed  []string // the lint findings that say it never fires
}

type bundleView struct {
	Name, Layer, InForce, Source, Problem string
	Mandatory, Blocked                    bool
}

type projectView struct {
	Root, Digest, Reason string
	Trusted              bool
}

func (s *Server) consolePolicy(w http.ResponseWriter, r *http.Request) {
	set := s.eng.PolicySet()
	st := s.Status()
	d := policyData{Digest: set.Digest(), LoadedAt: st.LoadedAt}
	disc := s.guard.Discovery()
	var srcs []policy.Source
	if disc != nil {
		srcs = disc.Sources
	}
	// The lint analyses of the set in force: which rules never fire.
	findings := map[string][]string{}
	if len(srcs) > 0 {
		_, ds, err := compile.Check(srcs)
		if err != nil {
			d.LintErr = err.Error()
		}
		for _, dg := range ds.Unsuppressed() {
			if dg.Code != policy.CodeShadowedRule && dg.Code != policy.CodeCrossLayerShadowed && dg.Code != policy.CodeFalseCondition {
				continue
			}
			key := dg.Pos.File + ":" + fmt.Sprint(dg.Pos.Line)
			findings[key] = append(findings[key], string(dg.Code)+": "+dg.Message)
			d.Findings++
		}
	}
	bySrc := map[string]policy.Source{}
	for _, src := range srcs {
		bySrc[src.Name] = src
	}
	layers := map[policy.Layer]*layerView{}
	layerSrcs := map[policy.Layer][]policy.Source{}
	for _, src := range srcs {
		layerSrcs[src.Layer] = append(layerSrcs[src.Layer], src)
	}
	for _, p := range set.Policies() {
		lv := layers[p.Layer]
		if lv == nil {
			lv = &layerView{Name: p.Layer.String(), Digest: compile.Digest(layerSrcs[p.Layer])}
			layers[p.Layer] = lv
		}
		pv := policyView{Name: p.Name, File: p.File, Untrusted: p.Untrusted, Monitored: p.Monitored, Bundle: bySrc[p.File].Bundle}
		for _, rule := range set.Rules() {
			if rule.Policy != p {
				continue
			}
			rv := ruleView{ID: rule.ID, Pos: rule.Pos.String(), Phase: rule.Phase.String(), Verdict: rule.Verdict.String(), Mandatory: rule.Mandatory, Reason: rule.Reason}
			// A rule's findings are at its entry or at its id.
			keys := []string{rule.Pos.File + ":" + fmt.Sprint(rule.Pos.Line)}
			if rule.Source != nil && rule.Source.ID.Pos.Line != 0 {
				keys = append(keys, rule.Source.ID.Pos.File+":"+fmt.Sprint(rule.Source.ID.Pos.Line))
			}
			for _, k := range slices.Compact(keys) {
				rv.Shadowed = append(rv.Shadowed, findings[k]...)
			}
			pv.Rules = append(pv.Rules, rv)
		}
		lv.Policies = append(lv.Policies, pv)
	}
	for l := policy.LayerAdmin; ; l-- { // highest first: the order rules are tried in
		if lv := layers[l]; lv != nil {
			d.Layers = append(d.Layers, *lv)
		}
		if l == policy.LayerBuiltin {
			break
		}
	}
	for _, b := range st.Bundles {
		bv := bundleView{Name: b.Name, Layer: b.Layer, Source: b.Source, Mandatory: b.Mandatory, Blocked: b.Blocked, Problem: b.Error}
		if b.InForce != nil {
			bv.InForce = fmt.Sprintf("%s@%s serial %d (%s)", b.InForce.Name, b.InForce.Version, b.InForce.Serial, b.InForce.Digest)
		}
		if b.Refused != nil {
			bv.Problem = strings.TrimSpace(bv.Problem + " last refusal: " + formatJSON(b.Refused))
		}
		d.Bundles = append(d.Bundles, bv)
	}
	if disc != nil && disc.Project != nil {
		p := disc.Project
		d.Project = &projectView{Root: p.Root, Digest: p.Digest, Trusted: p.Trusted, Reason: p.Reason}
	}
	s.render(w, r, http.StatusOK, "policy.html", page{Title: "Policy in force", Nav: "policy", Data: d})
}

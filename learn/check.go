package learn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// Options configure Learn.
type Options struct {
	// Bundle is the built-in bundle the rules are checked against and
	// tested with (recommended when empty).
	Bundle string
	// Replay is the configuration whose policies recorded sessions
	// (FromReplay) are decided with; the zero Config reads every layer,
	// as `celguard eval` does.
	Replay celguard.Config
}

// Dropped is a rule proposed and dropped, with why.
type Dropped struct {
	Proposal *Proposal `json:"proposal"`
	Reason   string    `json:"reason"`
}

// Result is what Learn proposes: the files to write, the rules kept and
// dropped, and the notes about approvals no rule was learnt from.
type Result struct {
	// Policy, Suite and BundleSuite are the files PolicyFile, SuiteFile
	// and BundleSuiteFile; nil when no rule is kept.
	Policy, Suite, BundleSuite []byte
	Proposals                  []*Proposal    `json:"proposals"`
	Dropped                    []Dropped      `json:"dropped,omitempty"`
	Sources                    []SourceDigest `json:"sources"`
	Notes                      policy.Diagnostics
	// Bundle and BundleDigest name the set the rules were checked
	// against; CorpusCalls is how many hostile corpus calls were decided
	// per rule directory.
	Bundle       string `json:"bundle"`
	BundleDigest string `json:"bundle_digest"`
	CorpusCalls  int    `json:"corpus_calls"`
}

// Learn reads the approvals of the inputs, proposes rules, drops those a
// mandatory rule refuses or that let a hostile corpus call through, and
// writes the policy and its tests, which it then runs (as `celguard test`
// does) before returning them. An error is a policy.Diagnostics when
// input records cannot be read.
func Learn(ctx context.Context, inputs []Input, opts Options) (*Result, error) {
	apps, sources, notes, err := Read(ctx, inputs, opts)
	if err != nil {
		return nil, err
	}
	return ProposeChecked(ctx, apps, sources, notes, opts)
}

// ProposeChecked is Learn on approvals already read.
func ProposeChecked(ctx context.Context, apps []Approval, sources []SourceDigest, notes policy.Diagnostics, opts Options) (*Result, error) {
	if opts.Bundle == "" {
		opts.Bundle = "recommended"
	}
	if _, ok := policies.Bundles()[opts.Bundle]; !ok {
		return nil, fmt.Errorf("unknown bundle %q", opts.Bundle)
	}
	r := &Result{Sources: sources, Notes: slices.Clone(notes), Bundle: opts.Bundle}
	base, baseSet, err := compiledBundle(opts.Bundle)
	if err != nil {
		return nil, err
	}
	r.BundleDigest = baseSet.Digest()
	c := &checker{ctx: ctx, base: base, baseSet: baseSet}
	apps = withoutSecrets(apps, r)
	kept := c.compiles(Propose(apps), r)
	kept = c.bundleRisks(kept, r)
	kept, err = c.corpus(kept, r)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(r.Dropped, func(a, b Dropped) int { return cmpStr(a.Proposal.ID, b.Proposal.ID) })
	for _, d := range r.Dropped {
		r.Notes = append(r.Notes, noteAt(CodeDropped, firstPos(d.Proposal), "rule %s (%s) dropped: %s", d.Proposal.ID, d.Proposal.Summary, d.Reason))
	}
	sortDiagnostics(r.Notes)
	r.Proposals = kept
	if len(kept) == 0 {
		return r, nil
	}
	if err := c.write(r, kept); err != nil {
		return nil, err
	}
	return r, nil
}

// withoutSecrets drops the approvals whose call holds a credential (what
// the decision log would redact): a rule would write it out in the clear.
func withoutSecrets(apps []Approval, r *Result) []Approval {
	var kept []Approval
	for _, a := range apps {
		args := a.Args
		if a.Pattern != nil {
			args = map[string]any{"rule": a.Pattern.Text}
		}
		rec := decisionlog.NewRecord(&eval.DecisionEvent{Decision: eval.Decision{Phase: policy.PhaseBefore},
			Call: eval.Call{Tool: a.Tool, Args: args, Cwd: a.Cwd}})
		if len(rec.Masked) > 0 {
			r.Notes = append(r.Notes, noteAt(CodeSkipped, a.Pos, "the %s call holds a credential (%s): no rule is written with it", a.Tool, rec.Masked[0].Path))
			continue
		}
		kept = append(kept, a)
	}
	return kept
}

func firstPos(p *Proposal) policy.Pos {
	if len(p.From) > 0 {
		return p.From[0]
	}
	return policy.Pos{}
}

// bundles caches each built-in bundle's sources and compiled set: they
// are embedded, so the same for the life of the process.
var bundles sync.Map // name -> *compiledBundleEntry

type compiledBundleEntry struct {
	once sync.Once
	srcs []policy.Source
	set  *compile.PolicySet
	err  error
}

// compiledBundle returns builtin:NAME's sources and compiled set.
func compiledBundle(name string) ([]policy.Source, *compile.PolicySet, error) {
	v, _ := bundles.LoadOrStore(name, &compiledBundleEntry{})
	e := v.(*compiledBundleEntry)
	e.once.Do(func() {
		if e.srcs, e.err = bundleSources(name); e.err != nil {
			return
		}
		if e.set, e.err = compile.Compile(e.srcs); e.err != nil {
			e.err = fmt.Errorf("the bundle %s: %w", name, e.err)
		}
	})
	return slices.Clone(e.srcs), e.set, e.err
}

// bundleSources are the sources of builtin:NAME, as a suite's policies
// entry reads them.
func bundleSources(name string) ([]policy.Source, error) {
	return policies.Discover(policies.Options{Bundle: name, UserDir: "-", ProjectDir: "-", HomeDir: "-", TrustFile: "-"})
}

type checker struct {
	ctx     context.Context
	base    []policy.Source
	baseSet *compile.PolicySet
}

// learnedSource is the policy of the proposals in the user's layer.
func learnedSource(props []*Proposal, layer policy.Layer) policy.Source {
	return policy.Source{Name: PolicyFile, Data: renderPolicy(nil, props), Layer: layer}
}

func (c *checker) drop(r *Result, p *Proposal, format string, a ...any) {
	r.Dropped = append(r.Dropped, Dropped{Proposal: p, Reason: fmt.Sprintf(format, a...)})
}

// PolicySource is the policy of the proposals as learn writes it (without
// its header), in the user's layer.
func PolicySource(props []*Proposal) policy.Source { return learnedSource(props, policy.LayerUser) }

// compiles keeps the proposals that compile on their own, allow each of
// their approved calls and none of their near misses.
func (c *checker) compiles(props []*Proposal, r *Result) []*Proposal {
	var kept []*Proposal
next:
	for _, p := range props {
		set, err := compile.Compile([]policy.Source{policies.ToolClasses(), learnedSource([]*Proposal{p}, policy.LayerUser)})
		if err != nil {
			c.drop(r, p, "it does not compile: %v", err)
			continue
		}
		eng, err := eval.New(set)
		if err != nil {
			c.drop(r, p, "%v", err)
			continue
		}
		for _, call := range p.Approved {
			if d := decide(c.ctx, eng, call); d.RuleID != p.ID || !allowed(d) {
				c.drop(r, p, "it does not allow its own approved call %s (%s)", call, d.Verdict)
				continue next
			}
		}
		for _, call := range p.NearMisses {
			if d := decide(c.ctx, eng, call); d.RuleID == p.ID {
				c.drop(r, p, "it allows its own near miss %s", call)
				continue next
			}
		}
		kept = append(kept, p)
	}
	return kept
}

// decide decides a call in a fresh session; an error is a refusal.
func decide(ctx context.Context, eng *eval.Engine, call Call) eval.Decision {
	d, err := eng.NewSession("learn", nil).Before(ctx, eval.Call{Tool: call.Tool, Args: call.Args, Cwd: call.Cwd})
	if err != nil {
		return eval.Decision{Verdict: policy.Block, Code: "learn_error", Reason: err.Error()}
	}
	return d
}

// deferAsks leaves every ask an ask, with its rule's code.
var deferAsks = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Defer}, nil
})

// allowed reports whether a decision lets the call run as it is.
func allowed(d eval.Decision) bool { return d.Verdict == policy.Allow || d.Verdict == policy.Warn }

// FallbackCodes are the codes of the bundle's asks that say only that
// celguard does not know a call (safe-defaults: a command not on the
// known-safe list, a tool no class names, a command it cannot see into).
// Learning is tuning those: an ask with any other code is the bundle
// recognising a risk (a pipe to a shell, a write outside the workspace,
// a secret file, a force push, ...), which a learnt rule must not lift.
var FallbackCodes = []string{"unlisted_command", "unknown_tool", "unverifiable_command"}

// bundleRisks drops every proposal whose approved call a mandatory rule of
// the bundle refuses, asks about or warns about, or that the bundle asks
// about or blocks for a specific risk (a code not in FallbackCodes).
func (c *checker) bundleRisks(props []*Proposal, r *Result) []*Proposal {
	eng, err := eval.New(c.baseSet, eval.WithApprover(deferAsks))
	if err != nil {
		return nil
	}
	var kept []*Proposal
next:
	for _, p := range props {
		for _, call := range p.Approved {
			d := decide(c.ctx, eng, call)
			if d.RuleID == "" {
				continue
			}
			if rule, ok := c.baseSet.Rule(d.RuleID); ok && rule.Mandatory && d.Verdict != policy.Allow {
				c.drop(r, p, "the mandatory rule %s (policy %s) decides %s on its approved call %s, and no rule may lift it", d.RuleID, d.Policy, d.Verdict, call)
				continue next
			}
			if !allowed(d) && !slices.Contains(FallbackCodes, d.Code) {
				c.drop(r, p, "the bundle's rule %s (policy %s) asks about its approved call %s for a specific risk (code %s): approve such calls one at a time", d.RuleID, d.Policy, call, d.Code)
				continue next
			}
		}
		kept = append(kept, p)
	}
	return kept
}

// corpusCall is a hostile corpus call rebased on a rule's directory.
type corpusCall struct {
	label string
	call  Call
}

// corpus drops, until none is left, every proposal that lets a hostile
// corpus call through that the bundle alone does not, deciding the corpus
// in each proposal's directory with the proposals added in the user's
// layer.
func (c *checker) corpus(props []*Proposal, r *Result) ([]*Proposal, error) {
	cases, err := policies.Corpus()
	if err != nil {
		return nil, fmt.Errorf("the hostile corpus: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/"
	}
	tools := map[string]bool{}
	dirs := map[string]bool{}
	for _, p := range props {
		tools[p.Tool] = true
		dirs[p.Cwd] = true
	}
	var calls []corpusCall
	seen := map[string]bool{}
	for _, dir := range sortedKeys(dirs) {
		work := dir
		if work == "" {
			work = strings.TrimSuffix(home, "/") + "/app"
		}
		for _, cc := range cases {
			if !cc.Family.Hostile() {
				continue
			}
			for _, dialect := range policies.CorpusDialects {
				tool, args, ok := cc.ToolCall(dialect)
				if !ok || !tools[tool] {
					continue
				}
				call := Call{Tool: tool, Args: rebase(args, work, home).(map[string]any), Cwd: rebase(cc.Cwd(), work, home).(string)}
				key := call.String()
				if seen[key] {
					continue
				}
				seen[key] = true
				calls = append(calls, corpusCall{label: cc.Family.Family, call: call})
			}
		}
	}
	eng, err := eval.New(c.baseSet)
	if err != nil {
		return nil, err
	}
	var hostile []corpusCall
	for _, cc := range calls {
		if !allowed(decide(c.ctx, eng, cc.call)) {
			hostile = append(hostile, cc)
		}
	}
	r.CorpusCalls = len(calls)
	for len(props) > 0 {
		set, err := compile.Compile(append(slices.Clone(c.base), learnedSource(props, policy.LayerUser)))
		if err != nil {
			return nil, fmt.Errorf("the learnt rules with the bundle: %w", err)
		}
		eng, err := eval.New(set)
		if err != nil {
			return nil, err
		}
		loosens := map[string]corpusCall{}
		for _, cc := range hostile {
			d := decide(c.ctx, eng, cc.call)
			if !allowed(d) || !strings.HasPrefix(d.RuleID, "learn-") || d.Policy != PolicyName {
				continue
			}
			if _, ok := loosens[d.RuleID]; !ok {
				loosens[d.RuleID] = cc
			}
		}
		if len(loosens) == 0 {
			break
		}
		var kept []*Proposal
		for _, p := range props {
			if cc, ok := loosens[p.ID]; ok {
				c.drop(r, p, "with it, the hostile corpus call %s (family %s) would be allowed, which the bundle alone does not allow", cc.call, cc.label)
				continue
			}
			kept = append(kept, p)
		}
		props = kept
	}
	return props, nil
}

// rebase rewrites the corpus's workspace and home in every string of v.
func rebase(v any, work, home string) any {
	switch x := v.(type) {
	case string:
		x = strings.ReplaceAll(x, policies.CorpusWork, work)
		return strings.ReplaceAll(x, policies.CorpusHome, strings.TrimSuffix(home, "/"))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = rebase(e, work, home)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rebase(e, work, home)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// write renders the files and runs their tests as `celguard test` does
// (the suite's policies above the built-in tool classes).
func (c *checker) write(r *Result, props []*Proposal) error {
	alone, err := compile.Compile([]policy.Source{policies.ToolClasses(), learnedSource(props, policy.LayerRegistered)})
	if err != nil {
		return fmt.Errorf("the learnt rules: %w", err)
	}
	aloneEng, err := eval.New(alone)
	if err != nil {
		return err
	}
	with, err := compile.Compile(append(slices.Clone(c.base), learnedSource(props, policy.LayerRegistered)))
	if err != nil {
		return fmt.Errorf("the learnt rules with the bundle: %w", err)
	}
	withEng, err := eval.New(with)
	if err != nil {
		return err
	}
	var own, bundled []testCase
	for _, p := range props {
		allow := testCase{name: p.ID + ": the approved calls are allowed"}
		ballow := testCase{name: p.ID + ": the approved calls are allowed beside the bundle"}
		for _, call := range p.Approved {
			d := decide(c.ctx, aloneEng, call)
			if !allowed(d) || d.Policy != PolicyName {
				return fmt.Errorf("rule %s does not allow its approved call %s (decided %s by %q)", p.ID, call, d.Verdict, d.RuleID)
			}
			allow.steps = append(allow.steps, testStep{call: call, want: expectation{verdict: d.Verdict.String(), rule: d.RuleID}})
			bd := decide(c.ctx, withEng, call)
			ballow.steps = append(ballow.steps, testStep{call: call, want: want(bd)})
		}
		miss := testCase{name: p.ID + ": near misses are not allowed by it"}
		bmiss := testCase{name: p.ID + ": near misses the bundle asks about are still asked"}
		for _, call := range p.NearMisses {
			d := decide(c.ctx, aloneEng, call)
			switch {
			case d.RuleID == p.ID:
				return fmt.Errorf("rule %s allows its own near miss %s", p.ID, call)
			case d.RuleID != "":
				continue // another learnt rule allows it: not a near miss of them all
			}
			miss.steps = append(miss.steps, testStep{call: call, want: expectation{rule: "none"}})
			if bd := decide(c.ctx, withEng, call); !allowed(bd) && bd.RuleID != "" {
				bmiss.steps = append(bmiss.steps, testStep{call: call, want: want(bd)})
			}
		}
		own = append(own, allow)
		bundled = append(bundled, ballow)
		if len(miss.steps) > 0 {
			own = append(own, miss)
		}
		if len(bmiss.steps) > 0 {
			bundled = append(bundled, bmiss)
		}
	}
	r.Policy = renderPolicy(r, props)
	r.Suite = renderSuite(r, PolicyName, []string{PolicyFile}, own)
	r.BundleSuite = renderSuite(r, PolicyName+"-with-"+r.Bundle, []string{policytest.BuiltinPrefix + r.Bundle, PolicyFile}, bundled)
	return verify(c.ctx, r)
}

// want is the expectation of a decision as a suite writes it.
func want(d eval.Decision) expectation {
	e := expectation{verdict: d.Verdict.String(), rule: d.RuleID, code: d.Code}
	if e.rule == "" {
		e.rule = "none"
	}
	return e
}

// verify runs the written suites as `celguard test DIR` runs them.
func verify(ctx context.Context, r *Result) error {
	fsys := fstest.MapFS{
		PolicyFile:      {Data: r.Policy},
		SuiteFile:       {Data: r.Suite},
		BundleSuiteFile: {Data: r.BundleSuite},
	}
	rep, err := policytest.RunFS(ctx, fsys, ".", policytest.Options{Extra: []policy.Source{policies.ToolClasses()}, Layer: policy.LayerRegistered})
	if err != nil {
		return err
	}
	if !rep.OK() {
		var fails []string
		for _, s := range rep.Suites {
			if s.Error != "" {
				fails = append(fails, s.File+": "+s.Error)
			}
			for _, cr := range s.Cases {
				if !cr.Pass {
					fails = append(fails, s.File+": "+cr.Name+": "+strings.Join(cr.Failures, "; "))
				}
			}
		}
		return errors.New("the learnt rules' tests do not pass (a bug of celguard learn): " + strings.Join(fails, "\n"))
	}
	return nil
}

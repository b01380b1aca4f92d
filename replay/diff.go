package replay

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// Direction says which way a decision flipped.
type Direction string

// Directions, by policy.Verdict.Strictness.
const (
	// Loosen: the head decides less strictly than the base (block→allow).
	Loosen Direction = "loosen"
	// Tighten: the head decides more strictly (allow→ask).
	Tighten Direction = "tighten"
	// Sideways: another verdict as strict, or the same verdict by
	// another rule whose code differs.
	Sideways Direction = "sideways"
)

// DiffReport is the decisions that flip when the same records are
// replayed under two policy sets, and the static difference of the sets.
// Its JSON is docs/schema/diff.schema.json.
type DiffReport struct {
	// Base and Head are the sets' digests.
	Base string `json:"base_digest"`
	Head string `json:"head_digest"`
	// Files, Events and Calls count what was replayed; Decisions the
	// events both sets decided.
	Files     int `json:"files"`
	Events    int `json:"events"`
	Calls     int `json:"calls"`
	Decisions int `json:"decisions"`
	// Flips counts the decisions whose verdict differs; Loosened and
	// Tightened those that went each way.
	Flips     int `json:"flips"`
	Loosened  int `json:"loosened"`
	Tightened int `json:"tightened"`
	// Groups are the flips grouped by phase, the rule that decides now,
	// the rule that used to and the two verdicts, in the order their first
	// flip was recorded, each with one example call.
	Groups []FlipGroup `json:"groups"`
	// Static is the difference of the two sets' rules.
	Static StaticDiff `json:"static"`
	// Errors are the records that could not be read.
	Errors []*Error `json:"errors"`
}

// FlipGroup is the flips of one kind.
type FlipGroup struct {
	Phase     policy.Phase   `json:"phase"`
	From      policy.Verdict `json:"from"`
	To        policy.Verdict `json:"to"`
	Direction Direction      `json:"direction"`
	// Rule decides now (head); WasRule used to (base). Empty: the
	// default verdict.
	Rule    compile.RuleRef `json:"rule"`
	WasRule compile.RuleRef `json:"was_rule"`
	Count   int             `json:"count"`
	// Example is the first flip of the group, the call masked (by the
	// head's masks) as the decision log masks it, with the head's
	// decision.
	Example Finding `json:"example"`
}

// direction is the way a verdict moved from a to b.
func direction(a, b policy.Verdict) Direction {
	switch sa, sb := a.Strictness(), b.Strictness(); {
	case sb < sa:
		return Loosen
	case sb > sa:
		return Tighten
	}
	return Sideways
}

type groupKey struct {
	phase     policy.Phase
	from, to  policy.Verdict
	rule, was compile.RuleRef
}

// Diff replays the record files under base and under head, each event
// decided by both in sessions of their own, and reports every decision
// whose verdict flips, with the static difference of the two sets.
func Diff(ctx context.Context, base, head *Engine, paths []string, opts Options) (*DiffReport, error) {
	files, err := Files(paths)
	if err != nil {
		return nil, err
	}
	rep := &DiffReport{Base: base.PolicySet().Digest(), Head: head.PolicySet().Digest(), Groups: []FlipGroup{}, Errors: []*Error{},
		Static: StaticDifference(base, head)}
	groups := map[groupKey]int{}
	p := Progress{TotalFiles: len(files)}
	report := func() {
		if opts.Progress != nil {
			opts.Progress(p)
		}
	}
	for _, path := range files {
		f, err := Open(path, opts.Format)
		if err != nil {
			var re *Error
			if errors.As(err, &re) {
				rep.Errors = append(rep.Errors, re)
				rep.Files++
				p.Files++
				continue
			}
			return nil, err
		}
		bs, hs := map[string]*eval.Session{}, map[string]*eval.Session{}
		for {
			if err := ctx.Err(); err != nil {
				f.Close()
				return nil, err
			}
			ev, err := f.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				var re *Error
				if !errors.As(err, &re) {
					f.Close()
					return nil, err
				}
				rep.Errors = append(rep.Errors, re)
				continue
			}
			rep.Events++
			bo, err := base.decide(ctx, bs, ev)
			if err != nil {
				f.Close()
				return nil, err
			}
			ho, err := head.decide(ctx, hs, ev)
			if err != nil {
				f.Close()
				return nil, err
			}
			if ev.Kind == Before {
				rep.Calls++
				p.Calls++
			}
			if !bo.Decided || !ho.Decided {
				continue
			}
			rep.Decisions++
			bd, hd := bo.Decision, ho.Decision
			if bd.Verdict == hd.Verdict {
				continue
			}
			rep.Flips++
			p.Flips++
			dir := direction(bd.Verdict, hd.Verdict)
			switch dir {
			case Loosen:
				rep.Loosened++
			case Tighten:
				rep.Tightened++
			}
			k := groupKey{hd.Phase, bd.Verdict, hd.Verdict, hd.RuleRef, bd.RuleRef}
			if i, ok := groups[k]; ok {
				rep.Groups[i].Count++
				continue
			}
			rec := head.Record(&ho)
			groups[k] = len(rep.Groups)
			rep.Groups = append(rep.Groups, FlipGroup{Phase: hd.Phase, From: bd.Verdict, To: hd.Verdict, Direction: dir, Rule: hd.RuleRef, WasRule: bd.RuleRef, Count: 1,
				Example: Finding{Record: ev.Pos, Host: ev.Host, Session: ev.Session, CallID: ev.Call.ID, Phase: hd.Phase, Tool: rec.Tool,
					Args: rec.Args, Masked: rec.Masked, Verdict: hd.Verdict, RuleRef: hd.RuleRef, Code: rec.Code, Reason: rec.Reason, Ran: ev.Kind == After}})
			if rep.Events%ProgressEvery == 0 {
				report()
			}
		}
		f.Close()
		rep.Files++
		p.Files++
		report()
	}
	return rep, nil
}

// StaticDiff is how two policy sets' rules differ, rule by rule (a rule is
// its policy's name and its id).
type StaticDiff struct {
	// Added and Removed are the rules only the head, or only the base, has.
	Added   []StaticRule `json:"added"`
	Removed []StaticRule `json:"removed"`
	// Changed are the rules both have whose phase, verdict, matcher,
	// condition, reason or priority differ (Detail says which).
	Changed []StaticRule `json:"changed"`
	// Reordered are the rules both have whose place among the rules both
	// have moved (Detail: from and to).
	Reordered []StaticRule `json:"reordered"`
	// Shadowed are the head's rules that compile's lint analyses say can
	// never decide (shadowed_rule, cross_layer_shadowed, false_condition)
	// and that could in the base, or that the base does not have.
	Shadowed []StaticRule `json:"shadowed"`
}

// StaticRule is one rule of a static diff, as the head has it (the base,
// for a removed rule).
type StaticRule struct {
	compile.RuleRef
	Phase   policy.Phase   `json:"phase"`
	Verdict policy.Verdict `json:"verdict"`
	Detail  string         `json:"detail,omitempty"`
}

func ruleKey(r *compile.Rule) string { return r.Policy.Name + "\x00" + r.ID }

func staticRule(r *compile.Rule, detail string) StaticRule {
	return StaticRule{RuleRef: r.Ref(), Phase: r.Phase, Verdict: r.Verdict, Detail: detail}
}

// neverDecides are the lint codes that say a rule can never decide.
var neverDecides = []policy.Code{policy.CodeShadowedRule, policy.CodeCrossLayerShadowed, policy.CodeFalseCondition}

// shadowedRules are the keys of the rules of the engine's set that
// compile's lint analyses (compile.Check, as celguard lint runs them) say
// can never decide, with the warning's message.
func shadowedRules(e *Engine) map[string]string {
	out := map[string]string{}
	set, ds, err := compile.Check(e.guard.Discovery().Sources)
	if err != nil || set == nil {
		return out
	}
	byPos := map[policy.Pos]*compile.Rule{}
	for _, r := range set.Rules() {
		byPos[r.Source.ID.Pos] = r
		if r.Source.Condition != nil {
			byPos[r.Source.Condition.Pos] = r
		}
	}
	for _, d := range ds {
		if !slices.Contains(neverDecides, d.Code) {
			continue
		}
		if r, ok := byPos[d.Pos]; ok {
			out[ruleKey(r)] = string(d.Code) + ": " + d.Message
		}
	}
	return out
}

// StaticDifference compares the two engines' sets rule by rule, using
// compile's lint analyses for the rules that can never decide.
func StaticDifference(baseEng, headEng *Engine) StaticDiff {
	base, head := baseEng.PolicySet(), headEng.PolicySet()
	sd := StaticDiff{Added: []StaticRule{}, Removed: []StaticRule{}, Changed: []StaticRule{}, Reordered: []StaticRule{}, Shadowed: []StaticRule{}}
	baseRules := map[string]*compile.Rule{}
	for _, r := range base.Rules() {
		baseRules[ruleKey(r)] = r
	}
	headRules := map[string]*compile.Rule{}
	for _, r := range head.Rules() {
		headRules[ruleKey(r)] = r
	}
	var commonBase, commonHead []string
	for _, r := range base.Rules() {
		if _, ok := headRules[ruleKey(r)]; ok {
			commonBase = append(commonBase, ruleKey(r))
		} else {
			sd.Removed = append(sd.Removed, staticRule(r, ""))
		}
	}
	for _, r := range head.Rules() {
		b, ok := baseRules[ruleKey(r)]
		if !ok {
			sd.Added = append(sd.Added, staticRule(r, ""))
			continue
		}
		commonHead = append(commonHead, ruleKey(r))
		if d := ruleChanges(b, r); d != "" {
			sd.Changed = append(sd.Changed, staticRule(r, d))
		}
	}
	// A rule is reordered when its place among the rules both sets have
	// differs: rules added or removed around it move nothing.
	for i, k := range commonHead {
		if j := slices.Index(commonBase, k); j != i {
			sd.Reordered = append(sd.Reordered, staticRule(headRules[k], "place "+itoa(j+1)+" → "+itoa(i+1)+" of the "+itoa(len(commonHead))+" rules both sets have"))
		}
	}
	baseShadowed, headShadowed := shadowedRules(baseEng), shadowedRules(headEng)
	for _, r := range head.Rules() {
		k := ruleKey(r)
		if msg, ok := headShadowed[k]; ok {
			if _, was := baseShadowed[k]; !was {
				sd.Shadowed = append(sd.Shadowed, staticRule(r, msg))
			}
		}
	}
	return sd
}

// ruleChanges says what differs between a rule's two versions.
func ruleChanges(a, b *compile.Rule) string {
	var what []string
	if a.Phase != b.Phase {
		what = append(what, "phase "+a.Phase.String()+" → "+b.Phase.String())
	}
	if a.Verdict != b.Verdict {
		what = append(what, "verdict "+a.Verdict.String()+" → "+b.Verdict.String())
	}
	if !slices.Equal(a.Tools, b.Tools) || !slices.Equal(a.Classes, b.Classes) {
		what = append(what, "matcher")
	}
	if exprText(a.Source.Condition) != exprText(b.Source.Condition) {
		what = append(what, "condition")
	}
	if a.Reason != b.Reason || exprText(a.Source.Message) != exprText(b.Source.Message) {
		what = append(what, "reason")
	}
	if a.Priority != b.Priority {
		what = append(what, "priority "+itoa(a.Priority)+" → "+itoa(b.Priority))
	}
	if a.Mandatory != b.Mandatory {
		what = append(what, "mandatory")
	}
	return strings.Join(what, ", ")
}

func exprText(e *policy.Expr) string {
	if e == nil {
		return ""
	}
	return e.Text
}

func itoa(n int) string { return strconv.Itoa(n) }

package compile

import (
	"slices"

	"cel.dev/cel-go/cel"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/policy"
)

// duplicateConditions reports, in one sequence of rules (one phase of the
// trusted or of the untrusted rules, in evaluation order), each rule whose
// condition is the same as an earlier rule's, at the same priority, for
// tools both may match (duplicate_condition): the earlier one is always
// tried first on those tools, so the later one is a copy that never decides
// or a mistake (an edited copy whose condition was not changed). Conditions
// are compared as CEL unparses their checked ASTs, so spacing, parentheses
// and quoting do not hide a copy; a condition that reads policy variables
// matches only one of the same policy (the same name may mean something
// else elsewhere). Rules without a condition are shadowing's (shadowed_rule).
func (l *linter) duplicateConditions(rules []*Rule) {
	type seen struct {
		r    *Rule
		text string
		vars bool
	}
	byPriority := map[int][]seen{}
	for _, r := range rules {
		if _, literal := l.literalBool(r.Source.Condition); r.Source.Condition == nil || literal {
			continue // shadowing's: shadowed_rule, false_condition
		}
		ce, ok := l.byPos[r.Source.Condition.Pos]
		if !ok {
			continue
		}
		text, err := cel.AstToString(ce.ast)
		if err != nil {
			continue
		}
		cur := seen{r: r, text: text, vars: len(ce.reads.vars) > 0}
		for _, prev := range byPriority[r.Priority] {
			if prev.text != cur.text || (cur.vars && prev.r.Policy != r.Policy) || !l.toolsOverlap(prev.r, r) {
				continue
			}
			l.warn(policy.CodeDuplicateCondition, r.Source.Condition.Pos, []policy.Pos{prev.r.Source.Condition.Pos},
				"rule %q has the same condition as rule %q at %s, at the same priority (%d) and phase, for tools both match: "+
					"on those tools %q always decides first, so this rule never does; remove the copy or change its condition",
				r.ID, prev.r.ID, prev.r.Source.Condition.Pos, r.Priority, prev.r.ID)
			break
		}
		byPriority[r.Priority] = append(byPriority[r.Priority], cur)
	}
}

// toolsOverlap reports whether some tool could match both rules: one
// matches every tool, or they name a tool, a glob or a class in common, or
// a tool of one is matched by a glob of the other or is in a class of the
// other.
func (l *linter) toolsOverlap(a, b *Rule) bool {
	all := func(r *Rule) bool { return len(r.Tools) == 0 && len(r.Classes) == 0 }
	if all(a) || all(b) {
		return true
	}
	for _, cl := range a.Classes {
		if slices.Contains(b.Classes, cl) {
			return true
		}
	}
	matches := func(tool string, r *Rule) bool {
		for _, t := range r.Tools {
			if t == tool {
				return true
			}
			if ok, _ := doublestar.Match(t, tool); ok && isGlob(t) {
				return true
			}
		}
		for _, cl := range l.c.classes.classesOf(tool) {
			if slices.Contains(r.Classes, cl) {
				return true
			}
		}
		return false
	}
	for _, t := range a.Tools {
		if matches(t, b) {
			return true
		}
	}
	for _, t := range b.Tools {
		if matches(t, a) {
			return true
		}
	}
	return false
}

package eval

import (
	"errors"
	"fmt"
	"maps"

	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// applyModify rewrites the call's arguments (before) or the result content
// (after) as modify rule r says. The decision takes the rewrite from the
// evaluation once a verdict is reached (carryRewrite, decide.go).
func (ev *evaluation) applyModify(r *compile.Rule) error {
	m := r.Modify
	if m == nil {
		return errors.New("modify rule without a modify block")
	}
	if !ev.phase.HasCall() {
		return ev.rewriteModel(r)
	}
	if ev.phase == policy.PhaseAfter {
		if m.Content == nil {
			return errors.New("after-phase modify without content")
		}
		out, err := ev.eval(r.Policy, m.Content)
		if err != nil {
			return fmt.Errorf("modify.content: %w", err)
		}
		s, ok := out.(types.String)
		if !ok {
			return fmt.Errorf("modify.content returned %s, not a string", out.Type())
		}
		content := string(s)
		ev.res.Content = content
		ev.result["content"] = content
		return nil
	}
	args := maps.Clone(ev.call.Args)
	if m.Args != nil {
		out, err := ev.eval(r.Policy, m.Args)
		if err != nil {
			return fmt.Errorf("modify.args: %w", err)
		}
		native, err := toNative(out, 0)
		if err != nil {
			return fmt.Errorf("modify.args: %w", err)
		}
		nm, ok := native.(map[string]any)
		if !ok {
			return fmt.Errorf("modify.args returned %s, not a map", out.Type())
		}
		args = nm
	}
	for _, s := range m.Set {
		out, err := ev.eval(r.Policy, s.Program)
		if err != nil {
			return fmt.Errorf("modify.set.%s: %w", s.Key, err)
		}
		v, err := toNative(out, 0)
		if err != nil {
			return fmt.Errorf("modify.set.%s: %w", s.Key, err)
		}
		args[s.Key] = v
	}
	for _, k := range m.Unset {
		delete(args, k)
	}
	ev.call.Args = args
	return nil
}

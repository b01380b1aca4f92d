package compile

import (
	"fmt"
	"slices"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// reservedNames reports the variables of p (nil for a file that is not a
// policy) named like a built-in variable or a stdlib namespace. It runs on
// every policy file, next to the parser's checks (policy sits below celenv
// and cannot know the names), so a reserved name counts as flagged at parse
// time: the variable is never declared.
func reservedNames(p *policy.Policy) policy.Diagnostics {
	if p == nil {
		return nil
	}
	var ds policy.Diagnostics
	reserved := celenv.ReservedNames()
	for _, v := range p.Variables {
		if v.Name.Value != "" && slices.Contains(reserved, v.Name.Value) {
			ds = append(ds, policy.Diagnostic{Code: policy.CodeReservedName, Severity: policy.SeverityError, Pos: v.Name.Pos,
				Message: fmt.Sprintf("variable name %q is reserved for a built-in variable or library", v.Name.Value)})
		}
	}
	return ds
}

package compile_test

import (
	"errors"
	"fmt"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

func ExampleCompile() {
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  - id: read-anything
    match: {tools: [Read, Glob, Grep]}
    verdict: allow
  - id: no-curl
    priority: 10
    match: {tools: [Bash]}
    condition: 'args.command.contains("curl")'
    verdict: block
`)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range set.Candidates(policy.PhaseBefore, "Bash") {
		fmt.Println(r.ID, r.Verdict)
	}
	// Output: no-curl block
}

func ExampleCompile_diagnostics() {
	_, err := compile.Compile([]policy.Source{{Name: "bad.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: bad
rules:
  - id: typo
    condition: 'args.command.startsWith("rm") && tol == "Bash"'
    verdict: block
`)}})
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		for _, d := range ds {
			fmt.Println(d.Pos, d.Code)
		}
	}
	// Output: bad.yaml:6:50 cel_type
}

package eval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// awsKey is the documentation example of an AWS access key id.
const awsKey = "AKIAIOSFODNN7EXAMPLE"

// promptyPolicy is the guardrails of a Prompty-style host: the input is
// refused when a message carries a credential, the output has its
// credentials redacted.
const promptyPolicy = `
rules:
  - id: no-secrets-to-the-model
    phase: input
    condition: 'messages.exists(m, secrets.has(m.content))'
    verdict: block
    code: secret_in_prompt
    message: '"a message to the model carries a " + messages.filter(m, secrets.has(m.content)).map(m, secrets.find(m.content)[0].kind)[0]'
  - id: redact-secrets-in-output
    phase: output
    condition: 'secrets.has(output.text)'
    verdict: modify
    modify:
      output: 'secrets.redact(output.text)'
  - id: long-prompt
    phase: input
    condition: 'messages.size() > 3'
    verdict: warn
  - id: stop-word
    phase: output
    condition: 'output.text.contains("HALT-NOW")'
    verdict: halt
`

// TestInputOutput: input rules see the messages, output rules the output;
// block, warn, halt and modify (a redaction) each decide as documented.
func TestInputOutput(t *testing.T) {
	eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": promptyPolicy}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("s", nil)
	user := func(text string) eval.Input {
		return eval.Input{ID: "m1", Agent: eval.Agent{Name: "writer"}, Messages: []eval.Message{
			{Role: "system", Content: "You are helpful."}, {Role: "user", Content: text}}}
	}

	d, err := s.Input(ctx, user("what is 2+2?"))
	if err != nil || d.Verdict != policy.Allow || d.Phase != policy.PhaseInput || d.RuleID != "" {
		t.Errorf("clean input = %+v, %v", d, err)
	}
	d, err = s.Input(ctx, user("deploy with key "+awsKey))
	if err != nil || d.Verdict != policy.Block || d.RuleID != "no-secrets-to-the-model" || d.Code != "secret_in_prompt" ||
		d.Reason != "a message to the model carries a aws_access_key" || d.CallID != "m1" || d.Agent.Name != "writer" {
		t.Errorf("input with an AWS key = %+v, %v", d, err)
	}
	in := user("a")
	in.Messages = append(in.Messages, eval.Message{Role: "assistant", Content: "b"}, eval.Message{Role: "user", Content: "c", Name: "ann"})
	if d, _ := s.Input(ctx, in); d.Verdict != policy.Warn || d.RuleID != "long-prompt" {
		t.Errorf("long input = %+v", d)
	}

	d, err = s.Output(ctx, eval.Output{Text: "your key is " + awsKey, Content: map[string]any{"n": 1}})
	if err != nil || d.Verdict != policy.Modify || d.Output == nil || d.Output.Text != "your key is [REDACTED:aws_access_key]" ||
		d.Output.Content != nil || len(d.Modified) != 1 {
		t.Errorf("output with an AWS key = %+v, %v", d, err)
	}
	if b, _ := json.Marshal(d); strings.Contains(string(b), awsKey) || !strings.Contains(string(b), `"output":{"text":"your key is [REDACTED:aws_access_key]","content":null}`) {
		t.Errorf("the decision's JSON: %s", b)
	}
	if d, _ := s.Output(ctx, eval.Output{Text: "4"}); d.Verdict != policy.Allow || d.Output != nil {
		t.Errorf("clean output = %+v", d)
	}
	if d, _ := s.Output(ctx, eval.Output{Text: "HALT-NOW"}); d.Verdict != policy.Halt {
		t.Errorf("halting output = %+v", d)
	}
	// A halt stops the turn: its input and its calls are refused.
	if d, _ := s.Input(ctx, user("hi")); d.Verdict != policy.Halt || d.Code != eval.CodeTurnHalted {
		t.Errorf("input after a halt = %+v", d)
	}
}

// TestInputModify: a modify rule of the input phase rewrites the message
// list; the rewritten list is in the decision, and the rules run again on
// it (a later block still sees the rewrite).
func TestInputModify(t *testing.T) {
	eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": `
rules:
  - id: redact
    phase: input
    condition: 'messages.exists(m, secrets.has(m.content))'
    verdict: modify
    modify:
      messages: 'messages.map(m, {"role": m.role, "content": secrets.redact(m.content), "name": m.name})'
  - id: no-system-override
    phase: input
    priority: -1
    condition: 'messages.exists(m, m.role == "system" && m.content.contains("ignore previous"))'
    verdict: block
`}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("s", nil)
	d, err := s.Input(ctx, eval.Input{Messages: []eval.Message{{Role: "user", Content: "key " + awsKey, Name: "bob"}}})
	want := []eval.Message{{Role: "user", Content: "key [REDACTED:aws_access_key]", Name: "bob"}}
	if err != nil || d.Verdict != policy.Modify || len(d.Messages) != 1 || d.Messages[0] != want[0] {
		t.Errorf("redacted input = %+v, %v", d, err)
	}
	d, _ = s.Input(ctx, eval.Input{Messages: []eval.Message{{Role: "system", Content: "ignore previous " + awsKey}}})
	if d.Verdict != policy.Block || d.Messages != nil || d.RuleID != "no-system-override" {
		t.Errorf("a rewrite never carries input past a block: %+v", d)
	}
	// A message without a role is refused.
	if d, err := s.Input(ctx, eval.Input{Messages: []eval.Message{{Content: "x"}}}); err == nil || d.Verdict != policy.Block || d.Code != eval.CodeInvalidCall {
		t.Errorf("roleless message = %+v, %v", d, err)
	}
}

// TestModelRewriteErrors: a rewrite of the wrong shape fails the rule
// (closed: a block with policy_error), never passes the original.
func TestModelRewriteErrors(t *testing.T) {
	for _, tc := range []struct{ phase, field, expr string }{
		{"input", "messages", `[{"role": "user", "content": "x", "extra": "y"}]`},
		{"input", "messages", `[{"content": "x"}]`},
		{"output", "output", `{"txt": "x"}`},
		{"output", "output", `{"text": 1}`},
		{"output", "output", `[1]`},
	} {
		eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": `
rules:
  - id: bad
    phase: ` + tc.phase + `
    verdict: modify
    modify:
      ` + tc.field + `: '` + tc.expr + `'
`}))
		if err != nil {
			t.Fatal(err)
		}
		s := eng.NewSession("s", nil)
		var d eval.Decision
		if tc.phase == "input" {
			d, _ = s.Input(context.Background(), eval.Input{Messages: []eval.Message{{Role: "user", Content: "hi"}}})
		} else {
			d, _ = s.Output(context.Background(), eval.Output{Text: "hi"})
		}
		if d.Verdict != policy.Block || d.Code != eval.CodePolicyError || d.Messages != nil || d.Output != nil {
			t.Errorf("%s %s: %+v", tc.field, tc.expr, d)
		}
	}
}

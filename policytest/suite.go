// Package policytest reads and runs celguard policy test suites
// (*_test.yaml files): named cases, each a sequence of steps (turn start,
// before call, after call with a result, clock advance) with the decision
// expected at each step.
//
// It is a top-level package because it sits above both compile and eval and
// is shared by three users that have no other common home: `go test` of the
// built-in policies, the conformance suite and the `celguard test` command.
package policytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// Suite is one test file.
type Suite struct {
	// File is the suite's name for messages.
	File string `yaml:"-"`
	// Name describes the suite; it defaults to the file name.
	Name string `yaml:"name"`
	// Policies are what the suite tests: a list of policy files and
	// directories relative to the suite's directory and builtin:NAME
	// entries (a built-in bundle or policy), or inline policies keyed by
	// file name (conformance cases). Empty means every policy file in the
	// suite's directory.
	Policies PolicyRefs `yaml:"policies"`
	// Session is the default session metadata of every case.
	Session map[string]any `yaml:"session"`
	// Monitor decides every case in monitor mode, as celguard --monitor
	// does (eval.WithMonitor): only mandatory rules and the default
	// verdict decide; the others are reported in monitored.
	Monitor bool   `yaml:"monitor"`
	Cases   []Case `yaml:"cases"`
}

// PolicyRefs is either a list of entries or a mapping of inline files.
type PolicyRefs struct {
	// Paths are the list's entries as written: paths relative to the
	// suite's directory, or BuiltinPrefix and the name of a built-in
	// bundle or policy.
	Paths []string
	// Pos holds where each entry of Paths is written (line and column;
	// ParseSuite sets the file).
	Pos    []policy.Pos
	Inline []policy.Source
	// Layered names the inline files that give their own layer; the
	// others take Options.Layer.
	Layered map[string]bool
}

// inlineFile is an inline policy given with its layer (docs/layers.md).
type inlineFile struct {
	Layer     string `yaml:"layer"`
	Untrusted bool   `yaml:"untrusted"`
	Text      string `yaml:"text"`
}

// UnmarshalYAML accepts a list of entries (paths, builtin:NAME) or a mapping of file name to text,
// or to {layer, untrusted, text} for a file of a given layer (an untrusted
// one is a project's the user has not trusted).
func (p *PolicyRefs) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode || e.Value == "" {
				return fmt.Errorf("line %d: a policies entry must be a path or builtin:NAME", e.Line)
			}
			p.Paths = append(p.Paths, e.Value)
			p.Pos = append(p.Pos, policy.Pos{Line: e.Line, Col: e.Column})
		}
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			// Inline policies keep their line numbers relative to their
			// own text, so diagnostics read as if they were files.
			src := policy.Source{Name: k.Value, Data: []byte(v.Value)}
			switch v.Kind {
			case yaml.ScalarNode:
			case yaml.MappingNode:
				var f inlineFile
				for j := 0; j+1 < len(v.Content); j += 2 {
					if key := v.Content[j].Value; key != "layer" && key != "untrusted" && key != "text" {
						return fmt.Errorf("line %d: inline policy %q: unknown key %q; expected layer, untrusted, text", v.Content[j].Line, k.Value, key)
					}
				}
				if err := v.Decode(&f); err != nil {
					return fmt.Errorf("line %d: inline policy %q: %v", v.Line, k.Value, err)
				}
				l, err := policy.ParseLayer(f.Layer)
				if err != nil {
					return fmt.Errorf("line %d: inline policy %q: %v", v.Line, k.Value, err)
				}
				if f.Untrusted && l != policy.LayerProject {
					return fmt.Errorf("line %d: inline policy %q: only a project file can be untrusted", v.Line, k.Value)
				}
				src.Data, src.Layer, src.Untrusted = []byte(f.Text), l, f.Untrusted
				if p.Layered == nil {
					p.Layered = map[string]bool{}
				}
				p.Layered[k.Value] = true
			default:
				return fmt.Errorf("line %d: inline policy %q must be a string of YAML text, or a mapping of layer, untrusted and text", v.Line, k.Value)
			}
			p.Inline = append(p.Inline, src)
		}
		return nil
	}
	return fmt.Errorf("line %d: policies must be a list of paths or a mapping of file names to policy text", n.Line)
}

// Case is one named scenario.
type Case struct {
	Name string `yaml:"name"`
	// Line is where the case starts in its file.
	Line int `yaml:"-"`
	// Session overrides the suite's session metadata.
	Session map[string]any `yaml:"session"`
	// Approver scripts the approver's answers, in order: approve, deny,
	// defer, approve_call (remembered for this call), approve_rule
	// (remembered for the rule). Absent means no approver.
	Approver []string `yaml:"approver"`
	// WantErrors makes the case a compile test: the policies must fail to
	// compile with exactly these diagnostic codes (in any order).
	WantErrors []string `yaml:"want_errors"`
	// WantWarnings makes the case check that the policies compile with at
	// least these codes among their warnings (and infos), before its steps,
	// if any, run.
	WantWarnings []string `yaml:"want_warnings"`
	Steps        []Step   `yaml:"steps"`
}

// Step is one event of a case. Exactly one of Turn, TurnEnd, Before, After,
// Input, Output, Tools, Resource and Advance is set.
type Step struct {
	// Turn starts a new turn.
	Turn bool `yaml:"turn"`
	// TurnEnd ends the turn: the turn_end rules decide (Session.EndTurn).
	TurnEnd bool `yaml:"turn_end"`
	// Before decides a call before it runs.
	Before *CallSpec `yaml:"before"`
	// After decides a call's result, given in Result.
	After *CallSpec `yaml:"after"`
	// Input decides the messages about to be sent to the model
	// (Session.Input).
	Input *InputSpec `yaml:"input"`
	// Output decides the model's output (Session.Output).
	Output *OutputSpec `yaml:"output"`
	// Tools decides whether a client is shown a tool (Session.Tools).
	Tools *ToolSpec `yaml:"tools"`
	// Resource decides a read of an MCP resource or prompt
	// (Session.Resource).
	Resource *ResourceSpec `yaml:"resource"`
	// Result is the tool's result: is_error, content and any other fields.
	Result map[string]any `yaml:"result"`
	// Advance moves the clock, e.g. 30s.
	Advance string `yaml:"advance"`
	// Repeat runs a before or after step this many times; Expect is checked
	// on the last run.
	Repeat int     `yaml:"repeat"`
	Expect *Expect `yaml:"expect"`
}

// Expect is the expected decision. Only the fields given are checked.
type Expect struct {
	Verdict string `yaml:"verdict" json:"verdict,omitempty"`
	// Rule is the deciding rule's id; "none" asserts that no rule decided.
	Rule           *string `yaml:"rule" json:"rule_id,omitempty"`
	Code           *string `yaml:"code" json:"code,omitempty"`
	Reason         *string `yaml:"reason" json:"reason,omitempty"`
	ReasonContains string  `yaml:"reason_contains" json:"reason_contains,omitempty"`
	// ContentContains checks that the rewritten result content holds this
	// text (after-phase modify).
	ContentContains string         `yaml:"content_contains" json:"content_contains,omitempty"`
	Args            map[string]any `yaml:"args" json:"args,omitempty"`
	Content         *string        `yaml:"content" json:"content,omitempty"`
	ModifiedBy      []string       `yaml:"modified_by" json:"modified_by,omitempty"`
	// Approval is the approval outcome: approved, denied, deferred,
	// remembered, unavailable.
	Approval string `yaml:"approval" json:"approval,omitempty"`
	// Untrusted checks whether the decision is an untrusted project's.
	Untrusted *bool `yaml:"untrusted" json:"untrusted,omitempty"`
	// Metadata is the decision's metadata, exactly (the deciding rule's
	// over its policy's); an empty mapping asserts none.
	Metadata map[string]string `yaml:"metadata" json:"metadata,omitempty"`
	// Messages are the rewritten messages, exactly (input-phase modify).
	Messages []MessageSpec `yaml:"messages" json:"messages,omitempty"`
	// Output is the rewritten output (output-phase modify): its text, and
	// its content when given.
	Output map[string]any `yaml:"output" json:"output,omitempty"`
	// Description is the tool's rewritten description (tools-phase
	// modify).
	Description *string `yaml:"description" json:"description,omitempty"`
	// Monitored is what a monitored rule would have decided (monitor
	// mode): its rule and verdict, and code when given; "none" as its
	// rule asserts that no monitored rule matched.
	Monitored *ExpectMonitored `yaml:"monitored" json:"monitored,omitempty"`
}

// ExpectMonitored is the expected Decision.Monitored.
type ExpectMonitored struct {
	Rule    string  `yaml:"rule" json:"rule_id"`
	Verdict string  `yaml:"verdict" json:"verdict,omitempty"`
	Code    *string `yaml:"code" json:"code,omitempty"`
}

// InputSpec is the model's input as written in a test file.
type InputSpec struct {
	Messages []MessageSpec `yaml:"messages"`
	CallID   string        `yaml:"call_id"`
	Agent    AgentSpec     `yaml:"agent"`
}

// MessageSpec is one message as written in a test file.
type MessageSpec struct {
	Role    string `yaml:"role" json:"role"`
	Content string `yaml:"content" json:"content"`
	Name    string `yaml:"name" json:"name,omitempty"`
}

// OutputSpec is the model's output as written in a test file.
type OutputSpec struct {
	Text    string    `yaml:"text"`
	Content any       `yaml:"content"`
	CallID  string    `yaml:"call_id"`
	Agent   AgentSpec `yaml:"agent"`
}

// ToolSpec is a tool about to be shown, as written in a test file.
type ToolSpec struct {
	// Tool is the name the policy sees (mcp__SERVER__TOOL).
	Tool        string    `yaml:"tool"`
	Name        string    `yaml:"name"`
	Title       string    `yaml:"title"`
	Description string    `yaml:"description"`
	InputSchema any       `yaml:"input_schema"`
	Agent       AgentSpec `yaml:"agent"`
}

// Definition converts the spec to an eval.ToolDefinition.
func (t ToolSpec) Definition() eval.ToolDefinition {
	return eval.ToolDefinition{Tool: t.Tool, Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: jsonValue(t.InputSchema), Agent: eval.Agent{Name: t.Agent.Name, IDs: t.Agent.IDs}}
}

// ResourceSpec is a read of a resource or prompt as written in a test
// file.
type ResourceSpec struct {
	Server    string            `yaml:"server"`
	Kind      string            `yaml:"kind"`
	URI       string            `yaml:"uri"`
	Name      string            `yaml:"name"`
	Arguments map[string]string `yaml:"arguments"`
	Agent     AgentSpec         `yaml:"agent"`
}

// Resource converts the spec to an eval.Resource; kind defaults to
// resource.
func (r ResourceSpec) Resource() eval.Resource {
	kind := r.Kind
	if kind == "" {
		kind = eval.KindResource
	}
	return eval.Resource{Server: r.Server, Kind: kind, URI: r.URI, Name: r.Name, Arguments: r.Arguments,
		Agent: eval.Agent{Name: r.Agent.Name, IDs: r.Agent.IDs}}
}

// Input converts the spec to an eval.Input.
func (in InputSpec) Input() eval.Input {
	out := eval.Input{ID: in.CallID, Agent: eval.Agent{Name: in.Agent.Name, IDs: in.Agent.IDs}}
	for _, m := range in.Messages {
		out.Messages = append(out.Messages, eval.Message(m))
	}
	return out
}

// Output converts the spec to an eval.Output.
func (o OutputSpec) Output() eval.Output {
	return eval.Output{Text: o.Text, Content: jsonValue(o.Content), ID: o.CallID, Agent: eval.Agent{Name: o.Agent.Name, IDs: o.Agent.IDs}}
}

// CallSpec is a tool call as written in a test file.
type CallSpec struct {
	Tool string         `yaml:"tool"`
	Args map[string]any `yaml:"args"`
	Cwd  string         `yaml:"cwd"`
	// CallID is the host's id of the call (eval.Call.ID).
	CallID string `yaml:"call_id"`
	// Agent is the agent that made the call (eval.Call.Agent).
	Agent AgentSpec `yaml:"agent"`
}

// AgentSpec is the agent of a call as written in a test file.
type AgentSpec struct {
	Name string            `yaml:"name"`
	IDs  map[string]string `yaml:"ids"`
}

// Call converts the spec to an eval.Call.
func (c CallSpec) Call() eval.Call {
	return eval.Call{Tool: c.Tool, Args: c.Args, Cwd: c.Cwd, ID: c.CallID, Agent: eval.Agent{Name: c.Agent.Name, IDs: c.Agent.IDs}}
}

// resultOf converts a result mapping to an eval.Result.
func resultOf(m map[string]any) (eval.Result, error) {
	var r eval.Result
	b, err := json.Marshal(m)
	if err != nil {
		return r, err
	}
	err = json.Unmarshal(b, &r)
	return r, err
}

// ParseSuite reads a test file. Every problem is a policy.Diagnostic at
// its line and column, with the codes a policy file's problems get
// (yaml_syntax, unknown_field, wrong_type, missing_field, invalid_value,
// invalid_verdict, unknown_builtin): the error is a policy.Diagnostics.
func ParseSuite(file string, data []byte) (*Suite, error) {
	root, ds := policy.CheckYAML(file, data, SuiteSchemaJSON)
	if err := ds.Err(); err != nil {
		return nil, err
	}
	var s Suite
	if root != nil {
		// The schema accepts what the decoder does; unknown fields are
		// refused again, should the two ever drift apart.
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil {
			return nil, policy.Diagnostics{yamlDecodeDiagnostic(file, root, err)}
		}
	}
	s.File = file
	if s.Name == "" {
		s.Name = file
	}
	for i := range s.Policies.Pos {
		s.Policies.Pos[i].File = file
	}
	if err := checkBuiltins(s.Policies); err != nil {
		return nil, policy.Diagnostics{err.(policy.Diagnostic)}
	}
	cases := seqOf(valueOf(root, "cases"))
	for i := range s.Cases {
		c := &s.Cases[i]
		var steps []*yaml.Node
		if i < len(cases) {
			c.Line = cases[i].Line
			steps = seqOf(valueOf(cases[i], "steps"))
		}
		if step, code, err := c.validate(); err != nil {
			n := (*yaml.Node)(nil)
			switch {
			case step > 0 && step <= len(steps):
				n = steps[step-1]
			case i < len(cases):
				n = cases[i]
			}
			at := policy.Pos{File: file, Line: c.Line, Col: 1}
			if n != nil {
				at = policy.Pos{File: file, Line: n.Line, Col: n.Column}
			}
			ds = append(ds, policy.Diagnostic{Code: code, Severity: policy.SeverityError, Pos: at,
				Message: fmt.Sprintf("case %q: %v", c.Name, err)})
		}
	}
	if err := ds.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}

// yamlDecodeDiagnostic places an error of decoding the suite at the line
// it names (its first node's column), else at the document's start.
func yamlDecodeDiagnostic(file string, root *yaml.Node, err error) policy.Diagnostic {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	at := policy.Pos{File: file, Line: root.Line, Col: root.Column}
	var line int
	if _, serr := fmt.Sscanf(msg, "line %d:", &line); serr == nil {
		at = policy.Pos{File: file, Line: line, Col: firstColumn(root, line)}
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	return policy.Diagnostic{Code: policy.CodeInvalidValue, Severity: policy.SeverityError, Pos: at, Message: msg}
}

// firstColumn is the column of the first node on line, or 1.
func firstColumn(n *yaml.Node, line int) int {
	if n.Line == line {
		return n.Column
	}
	for _, c := range n.Content {
		if col := firstColumn(c, line); col != 1 || c.Line == line {
			return col
		}
	}
	return 1
}

// valueOf is the value of key in the mapping n, or nil.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// seqOf is the items of the sequence n, or nil.
func seqOf(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// validate checks what the schema cannot: it returns the step (from 1; 0
// for the case itself) that is wrong, the code and the problem.
func (c *Case) validate() (int, policy.Code, error) {
	if c.Name == "" {
		return 0, policy.CodeMissingField, fmt.Errorf("a case needs a name")
	}
	if len(c.Steps) == 0 && len(c.WantErrors) == 0 && len(c.WantWarnings) == 0 {
		return 0, policy.CodeMissingField, fmt.Errorf("a case needs steps, want_errors or want_warnings")
	}
	for _, a := range c.Approver {
		if _, _, err := parseAnswer(a); err != nil {
			return 0, policy.CodeInvalidValue, err
		}
	}
	for i, st := range c.Steps {
		if code, err := st.validate(); err != nil {
			return i + 1, code, fmt.Errorf("step %d: %v", i+1, err)
		}
	}
	return 0, "", nil
}

// validate checks one step.
func (st Step) validate() (policy.Code, error) {
	n := 0
	if st.Turn {
		n++
	}
	if st.TurnEnd {
		n++
	}
	if st.Before != nil {
		n++
	}
	if st.After != nil {
		n++
	}
	if st.Input != nil {
		n++
	}
	if st.Output != nil {
		n++
	}
	if st.Tools != nil {
		n++
	}
	if st.Resource != nil {
		n++
	}
	if st.Advance != "" {
		n++
		if d, err := time.ParseDuration(st.Advance); err != nil || d < 0 {
			return policy.CodeInvalidDuration, fmt.Errorf("advance must be a duration such as 30s, not %q", st.Advance)
		}
	}
	switch {
	case n != 1:
		return policy.CodeInvalidValue, fmt.Errorf("give exactly one of turn, turn_end, before, after, input, output, tools, resource and advance")
	case st.After != nil && st.Result == nil:
		return policy.CodeMissingField, fmt.Errorf("an after step needs a result")
	case st.Result != nil && st.After == nil:
		return policy.CodeInvalidValue, fmt.Errorf("result goes with an after step")
	case st.Expect != nil && st.Before == nil && st.After == nil && !st.TurnEnd && st.Input == nil && st.Output == nil && st.Tools == nil && st.Resource == nil:
		return policy.CodeInvalidValue, fmt.Errorf("expect goes with a before, after, turn_end, input, output, tools or resource step")
	case st.Repeat < 0:
		return policy.CodeInvalidValue, fmt.Errorf("repeat must not be negative")
	}
	if st.Result != nil {
		if _, err := resultOf(st.Result); err != nil {
			return policy.CodeWrongType, err
		}
	}
	if st.Expect != nil && st.Expect.Verdict != "" {
		if _, err := policy.ParseVerdict(st.Expect.Verdict); err != nil {
			return policy.CodeInvalidVerdict, err
		}
	}
	return "", nil
}

func parseAnswer(s string) (eval.Answer, eval.Remember, error) {
	switch s {
	case "approve":
		return eval.Approve, eval.RememberNone, nil
	case "approve_call":
		return eval.Approve, eval.RememberCall, nil
	case "approve_rule":
		return eval.Approve, eval.RememberRule, nil
	case "deny":
		return eval.Deny, eval.RememberNone, nil
	case "defer":
		return eval.Defer, eval.RememberNone, nil
	}
	return eval.Deny, eval.RememberNone, fmt.Errorf("approver answer %q must be approve, approve_call, approve_rule, deny or defer", s)
}

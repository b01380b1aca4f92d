package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// outputSchemas compiles the JSON Schemas of docs/ that document the JSON
// outputs: one vocabulary (rule_id, file, line, col), docs/json.md.
func outputSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	files := map[string]string{
		"decision": filepath.Join("..", "..", "docs", "schema", "decision.schema.json"),
		"explain":  filepath.Join("..", "..", "docs", "schema", "explain.schema.json"),
		"test":     filepath.Join("..", "..", "docs", "schema", "test.schema.json"),
		"lint":     filepath.Join("..", "..", "docs", "lint-json.schema.json"),
		"log":      filepath.Join("..", "..", "docs", "schema", "decision-log.schema.json"),
		"replay":   filepath.Join("..", "..", "docs", "schema", "replay.schema.json"),
		"diff":     filepath.Join("..", "..", "docs", "schema", "diff.schema.json"),
	}
	urls := map[string]string{}
	for name, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		url := doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		urls[name] = url
	}
	out := map[string]*jsonschema.Schema{}
	for name, url := range urls {
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = sch
	}
	return out
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestOutputsMatchTheirSchemas runs eval (decisions with a trace and an
// approval, the stream's error lines, explanations), lint and test with
// --format json, and validates what they write against the schemas in
// docs/.
func TestOutputsMatchTheirSchemas(t *testing.T) {
	schemas := outputSchemas(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pol := write("p/guard.yaml", `apiVersion: celguard.dev/v1
kind: Policy
name: guard
metadata: {owner: sec}
decision_log:
  mask: [env.*, {tools: [Bash], args: [description]}]
counters:
  - name: calls
    increment_when: 'true'
rules:
  - id: no-sudo
    match: {tools: [Bash]}
    condition: 'has(args.command) && args.command.startsWith("sudo ")'
    verdict: block
    reason: no sudo
  - id: ask-push
    match: {tools: [Bash]}
    condition: 'has(args.command) && args.command == "git push"'
    verdict: ask
    reason: pushing needs a yes
  - id: unused
    match: {tools: [Never]}
    verdict: warn
    reason: never
  - id: redact-input
    phase: input
    condition: 'messages.exists(m, secrets.has(m.content))'
    verdict: modify
    modify:
      messages: 'messages.map(m, {"role": m.role, "content": secrets.redact(m.content), "name": m.name})'
  - id: redact-output
    phase: output
    condition: 'secrets.has(output.text)'
    verdict: modify
    modify:
      output: 'secrets.redact(output.text)'
`)
	write("p/guard_test.yaml", `cases:
  - name: blocks sudo
    steps:
      - before: {tool: Bash, args: {command: sudo ls}}
        expect: {verdict: block, rule: no-sudo}
  - name: wrong on purpose
    steps:
      - before: {tool: Bash, args: {command: ls}}
        expect: {verdict: block, rule: no-sudo}
`)
	write("p/bad_test.yaml", "cases:\n  - name: x\n    steps:\n      - before: {tool: Bash}\n        expect: {verdit: block}\n")
	stream := `{"event": "turn_start"}
{"event": "before", "tool": "Bash", "args": {"command": "sudo ls"}}
{"event": "before", "tool": "Bash", "args": {"command": "git push"}}
{"event": "before", "tool": "Bash", args: {}}
{"event": "before", "tool": "Bash", "working_dir": "/"}
{"event": "after", "tool": "Bash", "args": {"command": "ls"}, "result": {"is_error": false, "content": "x"}}
{"event": "input", "messages": [{"role": "user", "content": "AKIAIOSFODNN7EXAMPLE", "name": "ann"}]}
{"event": "output", "output": {"text": "AKIAIOSFODNN7EXAMPLE", "content": {"a": 1}}}
`
	logPath := filepath.Join(dir, "decisions.jsonl")
	for _, tt := range []struct {
		name   string
		schema string
		lines  bool // one JSON value per line
		args   []string
		stdin  string
		// file, when set, is validated instead of stdout.
		file string
	}{
		{"eval --decision-log", "log", true, []string{"eval", "--policy", pol, "--decision-log", logPath},
			stream + `{"event": "before", "tool": "Bash", "args": {"command": "ls", "description": "x", "env": {"K": "ghp_0123456789abcdefghijABCDEFGHIJ012345"}}}
{"event": "turn_end"}
`, logPath},
		{"eval", "decision", true, []string{"eval", "--trace", "--policy", pol}, stream, ""},
		{"eval --explain=json", "explain", true, []string{"eval", "--explain=json", "--policy", pol}, strings.ReplaceAll(stream, `args: {}`, `"args": {}`), ""},
		{"lint", "lint", false, []string{"lint", "--format", "json", filepath.Join(dir, "p")}, "", ""},
		{"test", "test", false, []string{"test", "--format", "json", "--coverage", filepath.Join(dir, "p")}, "", ""},
		// After the eval that wrote the decision log: replay reads it, and
		// the stream with its bad lines (the report's errors).
		{"replay", "replay", false, []string{"replay", "--format", "json", "--policy", pol, logPath, write("stream.jsonl", stream)}, "", ""},
		{"replay --monitor-report", "replay", false, []string{"replay", "--format", "json", "--monitor-report", logPath}, "", ""},
		{"diff", "diff", false, []string{"diff", "--format", "json", "--base", pol, "--head", write("head/guard.yaml", strings.Replace(strings.Replace(mustRead(t, pol), "verdict: ask", "verdict: block", 1), "id: unused", "id: now-used", 1)), logPath}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			run(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if tt.file != "" {
				data, err := os.ReadFile(tt.file)
				if err != nil {
					t.Fatal(err)
				}
				stdout.Reset()
				stdout.Write(data)
			}
			if stdout.Len() == 0 {
				t.Fatalf("no output; stderr:\n%s", stderr.String())
			}
			docs := []string{stdout.String()}
			if tt.lines {
				docs = nil
				sc := bufio.NewScanner(&stdout)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					docs = append(docs, sc.Text())
				}
			}
			for _, doc := range docs {
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
				if err != nil {
					t.Fatalf("not JSON: %v\n%s", err, doc)
				}
				if err := schemas[tt.schema].Validate(v); err != nil {
					t.Errorf("%s does not match docs' %s schema: %v\n%s", tt.name, tt.schema, err, doc)
				}
			}
		})
	}
}

package replay_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/replay"
)

// readAll reads every event and error of a file in format f.
func readAll(t testing.TB, f replay.Format, data string) ([]replay.Event, []*replay.Error) {
	t.Helper()
	r, err := replay.NewReader(f, "rec.jsonl", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var evs []replay.Event
	var errs []*replay.Error
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("the reader does not end")
		}
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs, errs
		}
		var re *replay.Error
		if errors.As(err, &re) {
			errs = append(errs, re)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// kinds renders the events' kinds and tools, e.g. "turn_start before:Bash".
func kinds(evs []replay.Event) string {
	var out []string
	for _, ev := range evs {
		s := ev.Kind.String()
		if ev.Call.Tool != "" {
			s += ":" + ev.Call.Tool
		}
		if ev.NotRun != "" {
			s += "(not run)"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestReadersBadLines: a line a reader does not understand is an error
// at its file:line with a stable code, and the lines after it are read.
func TestReadersBadLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format replay.Format
		data   string
		want   string // the events' kinds
		errs   []string
	}{
		{
			name: "claude truncated line", format: replay.FormatClaudeCode,
			data: `{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"assistant","sessionId":"s","message":{"content":[{"type":"tool_use","id":"t1","na
{"type":"assistant","sessionId":"s","cwd":"/r","message":{"content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","sessionId":"s","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"a"}]},"toolUseResult":{"stdout":"a","stderr":""}}
`,
			want: "turn_start before:Bash after:Bash",
			errs: []string{"rec.jsonl:2: replay_invalid_json"},
		},
		{
			name: "claude unknown type", format: replay.FormatClaudeCode,
			data: `{"type":"brand-new","sessionId":"s"}
{"type":"assistant","sessionId":"s","message":{"content":[],"stop_reason":"end_turn"}}
`,
			want: "turn_end",
			errs: []string{"rec.jsonl:1: replay_unknown_record"},
		},
		{
			name: "claude result of an unknown call", format: replay.FormatClaudeCode,
			data: `{"type":"user","sessionId":"s","message":{"content":[{"type":"tool_result","tool_use_id":"nope","content":"a"}]}}
`,
			errs: []string{"rec.jsonl:1: replay_invalid_record"},
		},
		{
			name: "codex interleaved", format: replay.FormatCodex,
			data: `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/r"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}{"timestamp":
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"x"}}
{"timestamp":"2026-01-01T00:00:03Z","type":"mystery","payload":{}}
`,
			errs: []string{"rec.jsonl:2: replay_invalid_json", "rec.jsonl:3: replay_invalid_record", "rec.jsonl:4: replay_unknown_record"},
		},
		{
			name: "gemini message before the header", format: replay.FormatGemini,
			data: `{"id":"m","timestamp":"2026-01-01T00:00:00Z","type":"user","content":[{"text":"hi"}]}
{"sessionId":"s","projectHash":"h","startTime":"2026-01-01T00:00:00Z"}
{"id":"m2","timestamp":"2026-01-01T00:00:00Z","type":"user","content":[{"text":"hi"}]}
{"id":"m3","timestamp":"2026-01-01T00:00:00Z","type":"gemini","content":"","toolCalls":[{"id":"c","name":"run_shell_command","args":{"command":"ls"},"status":"success","result":[{"functionResponse":{"response":{"output":"a"}}}]}]}
`,
			want: "turn_start before:run_shell_command after:run_shell_command turn_end",
			errs: []string{"rec.jsonl:1: replay_invalid_record"},
		},
		{
			name: "decision log", format: replay.FormatDecisionLog,
			data: `{"decision_id":"a","session_id":"s","phase":"before","tool":"Bash","args":{"command":"ls"},"verdict":"allow"}
{"decision_id":"b","session_id":"s","phase":"sideways","tool":"Bash","verdict":"allow"}
{"hello":"world"}
{"decision_id":"c","session_id":"s","phase":"turn_end","tool":"","verdict":"allow"}
{"decision_id":"d","session_id":"s","phase":"before","tool":"Bash","verdict":"block"}
`,
			want: "before:Bash turn_end turn_start before:Bash",
			errs: []string{"rec.jsonl:2: replay_invalid_record", "rec.jsonl:3: replay_unknown_record"},
		},
		{
			name: "events", format: replay.FormatEvents,
			data: `{"event":"turn_start"}
{"event":"before","tool":"Bash","args":{"command":"ls"},"bogus":1}
{"event":"before","tool":"Bash","args":{"command":"ls"}}
not json
{"event":"after","tool":"Bash","args":{"command":"ls"},"result":{"content":"x"}}
`,
			want: "turn_start before:Bash after:Bash",
			errs: []string{"rec.jsonl:2: replay_invalid_record", "rec.jsonl:4: replay_unknown_record"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, errs := readAll(t, tc.format, tc.data)
			if got := kinds(evs); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if len(errs) != len(tc.errs) {
				t.Fatalf("errors %v, want %v", errs, tc.errs)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.errs[i]) {
					t.Errorf("error %d: %v, want %s...", i, e, tc.errs[i])
				}
			}
		})
	}
}

// TestRecordTooLong: a line over MaxRecord is an error and is not held.
func TestRecordTooLong(t *testing.T) {
	old := replay.MaxRecord
	replay.MaxRecord = 64
	defer func() { replay.MaxRecord = old }()
	data := `{"event":"turn_start"}` + "\n" + `{"event":"before","tool":"Bash","args":{"command":"` + strings.Repeat("x", 200000) + `"}}` + "\n" + `{"event":"turn_end"}` + "\n"
	evs, errs := readAll(t, replay.FormatEvents, data)
	if kinds(evs) != "turn_start turn_end" || len(errs) != 1 || errs[0].Code != replay.CodeRecordTooLong || errs[0].Line != 2 {
		t.Errorf("events %q, errors %v", kinds(evs), errs)
	}
}

// TestHostTranscripts pins what each reader reads of the real hosts'
// records: the turns, the calls as the hooks saw them, the refused ones.
func TestHostTranscripts(t *testing.T) {
	for _, tc := range []struct {
		glob, want, command string
	}{
		{"claude-code/block/*-*-*-*.jsonl", "turn_start before:Bash after:Bash(not run) turn_end", "touch celguard-blocked"},
		{"claude-code/allow/*-*-*-*.jsonl", "turn_start before:Bash after:Bash turn_end", "touch celguard-allowed"},
		{"codex/block/rollout-*.jsonl", "turn_start before:Bash after:Bash(not run) turn_end", "touch celguard-blocked"},
		{"codex/allow/rollout-*.jsonl", "turn_start before:Bash after:Bash turn_end", "touch celguard-allowed"},
		{"gemini/block/session-*.jsonl", "turn_start before:run_shell_command after:run_shell_command(not run) turn_end", "touch celguard-blocked"},
		{"gemini/allow/session-*.jsonl", "turn_start before:run_shell_command after:run_shell_command turn_end", "touch celguard-allowed"},
	} {
		t.Run(tc.glob, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(hostRecords, tc.glob))
			if len(files) != 1 {
				t.Fatalf("%d files match", len(files))
			}
			f, err := replay.Open(files[0], "")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var evs []replay.Event
			for {
				ev, err := f.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
			if got := kinds(evs); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			for _, ev := range evs {
				if ev.Kind == replay.Before {
					if ev.Call.Args["command"] != tc.command || ev.Call.ID == "" || ev.Session == "" || ev.Time.IsZero() {
						t.Errorf("call %+v at %s", ev.Call, ev.Pos)
					}
					if !strings.HasPrefix(tc.glob, "gemini") && ev.Call.Cwd != "/e2e/project" {
						t.Errorf("cwd %q", ev.Call.Cwd)
					}
				}
			}
		})
	}
}

// FuzzReaders: no reader panics or loops on any input, and every error is
// positioned with a code.
func FuzzReaders(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(hostRecords, "*", "*", "*.jsonl"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 20000 {
			data = data[:20000]
		}
		f.Add(string(data))
	}
	f.Add(`{"event":"before","tool":"Bash"}` + "\n{")
	f.Fuzz(func(t *testing.T, data string) {
		for _, format := range replay.Formats {
			_, errs := readAll(t, format, data)
			for _, e := range errs {
				if e.Line <= 0 || e.Code == "" || e.File != "rec.jsonl" {
					t.Fatalf("%s: unpositioned error %+v", format, e)
				}
			}
		}
		if _, r, err := replay.Detect("rec.jsonl", strings.NewReader(data)); err == nil {
			for i := 0; i < 100000; i++ {
				if _, err := r.Next(); errors.Is(err, io.EOF) {
					break
				}
			}
		}
	})
}

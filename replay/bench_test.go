package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/replay"
)

// benchTranscript is a Claude Code transcript of n calls, in the shape
// Claude Code 2.1.330 writes (testdata/hosts/claude-code): a prompt every
// ten calls, each call a tool_use and its tool_result, a mix of shell
// commands, reads and edits.
func benchTranscript(n int) []byte {
	var b bytes.Buffer
	cmds := []string{"go test ./...", "git status", "ls -la", "make build", "grep -rn TODO .", "cat go.mod", "npm test", "git diff HEAD~1"}
	for i := 0; i < n; i++ {
		ts := fmt.Sprintf("2026-11-26T10:%02d:%02d.%03dZ", (i/60)%60, i%60, i%1000)
		if i%10 == 0 {
			fmt.Fprintf(&b, `{"type":"user","sessionId":"bench","timestamp":%q,"cwd":"/repo","message":{"role":"user","content":"step %d"}}`+"\n", ts, i)
		}
		id := fmt.Sprintf("toolu_%d", i)
		var tool, input string
		switch i % 4 {
		case 0, 1:
			tool, input = "Bash", fmt.Sprintf(`{"command":%q,"description":"run"}`, cmds[i%len(cmds)])
		case 2:
			tool, input = "Read", fmt.Sprintf(`{"file_path":"/repo/pkg/file%d.go"}`, i%50)
		default:
			tool, input = "Edit", fmt.Sprintf(`{"file_path":"/repo/pkg/file%d.go","old_string":"a","new_string":"b"}`, i%50)
		}
		fmt.Fprintf(&b, `{"type":"assistant","sessionId":"bench","timestamp":%q,"cwd":"/repo","message":{"content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"stop_reason":"tool_use"}}`+"\n", ts, id, tool, input)
		fmt.Fprintf(&b, `{"type":"user","sessionId":"bench","timestamp":%q,"cwd":"/repo","message":{"content":[{"type":"tool_result","tool_use_id":%q,"content":"ok","is_error":false}]},"toolUseResult":{"stdout":"ok","stderr":"","interrupted":false}}`+"\n", ts, id)
	}
	return b.Bytes()
}

// BenchmarkReplay replays a Claude Code transcript in process and reports
// calls per second, of the wall clock and of this process's CPU time
// (user + system; the figure that holds on a shared machine), against a
// 20-rule team policy (internal/benchdata) and the recommended built-in
// bundle:
//
//	go test ./replay -run '^$' -bench BenchmarkReplay -cpu 1
func BenchmarkReplay(b *testing.B) {
	const calls = 2000
	data := benchTranscript(calls)
	for _, tc := range []struct {
		name string
		cfg  celguard.Config
	}{
		{"team20", celguard.Config{Sources: func() ([]policy.Source, error) {
			return []policy.Source{benchdata.Source20(), policies.ToolClasses()}, nil
		}}},
		{"recommended", celguard.Config{Policies: policies.Options{Bundle: "recommended", UserDir: "-", ProjectDir: "-", HomeDir: "-"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			eng, err := replay.NewEngine(context.Background(), tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			b.SetBytes(int64(len(data)))
			decided := 0
			cpu0 := cpuTime()
			for b.Loop() {
				r, err := replay.NewReader(replay.FormatClaudeCode, "bench.jsonl", bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				err = eng.Replay(context.Background(), r, func(o *replay.Outcome) error {
					if o.ReadErr != nil || o.Err != nil {
						return fmt.Errorf("%v %v", o.ReadErr, o.Err)
					}
					if o.Event.Kind == replay.Before {
						decided++
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - cpu0
			if decided != calls*b.N {
				b.Fatalf("decided %d calls, want %d", decided, calls*b.N)
			}
			b.ReportMetric(float64(decided)/b.Elapsed().Seconds(), "calls/s")
			if cpu > 0 {
				b.ReportMetric(float64(decided)/cpu.Seconds(), "calls/cpu-s")
			}
		})
	}
}

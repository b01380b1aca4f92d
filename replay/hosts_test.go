package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/replay"
)

// hostRecords are the records hooks/hostse2e kept: HOST/SCENARIO holds the
// host's transcript and the decision log its hook wrote live.
const hostRecords = "testdata/hosts"

// e2eEngine is the engine of the policy the real-host suite installed.
func e2eEngine(t testing.TB) *replay.Engine {
	t.Helper()
	eng, err := replay.NewEngine(context.Background(), celguard.Config{Policies: policies.Options{Explicit: []string{filepath.Join(hostRecords, "policy.yaml")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// counts are decisions by phase and verdict ("before allow").
type counts map[string]int

// move counts one decision of from as to.
func (c counts) move(from, to string) {
	c[from]--
	if c[from] == 0 {
		delete(c, from)
	}
	c[to]++
}

func (c counts) String() string {
	var keys []string
	for k, n := range c {
		keys = append(keys, fmt.Sprintf("%s=%d", k, n))
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// replayCounts replays a file and counts its call decisions (before and
// after) by phase and verdict, failing on any record it cannot read; it
// adds the sessions it read to sessions.
func replayCounts(t *testing.T, eng *replay.Engine, path string, sessions map[string]bool) (replay.Format, counts) {
	t.Helper()
	f, err := replay.Open(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := counts{}
	err = eng.Replay(context.Background(), f, func(o *replay.Outcome) error {
		if o.ReadErr != nil {
			t.Errorf("%v", o.ReadErr)
			return nil
		}
		if o.Err != nil {
			t.Errorf("%s: %v", o.Event.Pos, o.Err)
		}
		if o.Decided && o.Decision.Phase.HasCall() {
			c[o.Decision.Phase.String()+" "+o.Decision.Verdict.String()]++
		}
		sessions[o.Event.Session] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f.Format, c
}

// TestHostRecordsMatchLive replays each transcript the real hosts wrote
// in hooks/hostse2e with the suite's policy and compares the call
// decisions with those the hooks made live, which their decision log
// recorded. Where the host records the call as it ran, after celguard
// rewrote it, the replay sees the rewritten call and allows it: those
// differences are listed, each with why.
func TestHostRecordsMatchLive(t *testing.T) {
	// rewritten are the decisions that differ, by HOST/SCENARIO: the live
	// verdict, then the replayed one.
	rewritten := map[string][2]string{
		// Every host records the output the model read: redacted.
		"claude-code/redact": {"after modify", "after allow"},
		"codex/redact":       {"after modify", "after allow"},
		"gemini/redact":      {"after modify", "after allow"},
		// Gemini CLI records the arguments the call ran with: rewritten.
		"gemini/modify": {"before modify", "before allow"},
	}
	eng := e2eEngine(t)
	dirs, _ := filepath.Glob(filepath.Join(hostRecords, "*", "*"))
	if len(dirs) < 12 {
		t.Fatalf("found %d host scenarios in %s; hooks/hostse2e -update-records writes 12", len(dirs), hostRecords)
	}
	for _, dir := range dirs {
		name := filepath.ToSlash(strings.TrimPrefix(dir, hostRecords+string(filepath.Separator)))
		host := strings.Split(name, "/")[0]
		t.Run(name, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
			var replayed counts
			var logFile string
			transcriptSessions := map[string]bool{}
			for _, f := range files {
				if filepath.Base(f) == "celguard-decisions.jsonl" {
					logFile = f
					continue
				}
				format, c := replayCounts(t, eng, f, transcriptSessions)
				if string(format) != host {
					t.Fatalf("%s read as %s, not %s", f, format, host)
				}
				replayed = c
			}
			if logFile == "" || replayed == nil {
				t.Fatalf("no transcript or no decision log in %s", dir)
			}
			format, c := replayCounts(t, eng, logFile, map[string]bool{})
			if format != replay.FormatDecisionLog {
				t.Fatalf("%s read as %s", logFile, format)
			}
			// The decision log replays as it was decided, but for the
			// after rules that read the result: the log does not keep it.
			want := liveCounts(t, logFile, nil)
			if strings.HasSuffix(name, "/redact") {
				want.move("after modify", "after allow")
			}
			if c.String() != want.String() {
				t.Errorf("the decision log replays as %v; live: %v", c, want)
			}
			// The transcript's sessions only (doctor's probe has its own).
			live := liveCounts(t, logFile, transcriptSessions)
			if d, ok := rewritten[name]; ok {
				live.move(d[0], d[1])
			}
			if replayed.String() != live.String() {
				t.Errorf("replayed %v; live %v", replayed, live)
			}
		})
	}
}

// liveCounts counts a decision log's call decisions by phase and verdict,
// of the sessions named (nil: all).
func liveCounts(t *testing.T, path string, sessions map[string]bool) counts {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := counts{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var phase, verdict, session string
		for _, f := range []struct {
			key string
			dst *string
		}{{`"phase":"`, &phase}, {`"verdict":"`, &verdict}, {`"session_id":"`, &session}} {
			_, rest, ok := strings.Cut(line, f.key)
			if !ok {
				t.Fatalf("%s: a record without %s", path, f.key)
			}
			*f.dst, _, _ = strings.Cut(rest, `"`)
		}
		if sessions != nil && !sessions[session] {
			continue
		}
		if p, err := policy.ParsePhase(phase); err == nil && p.HasCall() {
			c[phase+" "+verdict]++
		}
	}
	return c
}

package hostse2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	celguardcfg "github.com/celguard/celguard"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/replay"
)

// updateRecords makes the suite keep the records the hosts and celguard
// wrote in each scenario (the host's transcript, celguard's decision log)
// as the test data of package replay, in replay/testdata/hosts/HOST: run
//
//	go test ./hooks/hostse2e -run TestHosts -update-records
//
// when a host's tested version changes, and commit the result with the
// host versions it names (replay/testdata/hosts/VERSIONS).
var updateRecords = flag.Bool("update-records", false, "keep the hosts' transcripts and celguard's decision logs as replay/testdata/hosts")

// recordsDir is where the records are kept, from this package's directory.
var recordsDir = filepath.Join("..", "..", "replay", "testdata", "hosts")

// replayHosts are the hosts whose records package replay reads.
var replayHosts = []string{"claude-code", "codex", "gemini"}

// recordScenarios are the scenarios whose records are kept: those the
// hooks decided with the e2e policy.
var recordScenarios = []string{"allow", "block", "modify", "redact", "ask"}

// transcriptFiles are the host's own records under home: Claude Code's
// project transcripts, Codex's session rollouts and Gemini CLI's chats
// and logs.
func transcriptFiles(t *testing.T, home string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(home, path)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(rel, ".claude/projects/") && strings.HasSuffix(rel, ".jsonl"),
			strings.HasPrefix(rel, ".codex/sessions/") && strings.HasSuffix(rel, ".jsonl"),
			strings.HasPrefix(rel, ".gemini/tmp/") && (strings.Contains(rel, "/chats/") || strings.HasSuffix(rel, "/logs.json")):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// keepRecords copies the scenario's transcripts and decision log into
// recordsDir/HOST/SCENARIO, with the scenario's temporary root replaced by
// /e2e so that no path of the machine that ran it is committed.
func keepRecords(t *testing.T, hostName, scenario, root, home, decisions string) {
	t.Helper()
	dir := filepath.Join(recordsDir, hostName, scenario)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	files := transcriptFiles(t, home)
	if len(files) == 0 {
		t.Fatalf("%s wrote no transcript under %s", hostName, home)
	}
	for _, f := range append(files, decisions) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The work directory is /e2e/project: a "work" directory under the root reads
		// as a machine's checkout.
		data = bytes.ReplaceAll(data, []byte(filepath.Join(root, "work")), []byte("/e2e/project"))
		data = bytes.ReplaceAll(data, []byte(root), []byte("/e2e"))
		// The hosts also name the test's directories in their own forms:
		// Claude Code's project directory (every other character a dash)
		// and Gemini CLI's temporary directory of the project (its base
		// name). Neither may carry this machine's paths into the records.
		data = bytes.ReplaceAll(data, []byte(claudeProjectName(filepath.Join(root, "work"))), []byte("-e2e-work"))
		data = bytes.ReplaceAll(data, []byte("/.gemini/tmp/work"), []byte("/.gemini/e2e-project"))
		if celguardDir != "" {
			data = bytes.ReplaceAll(data, []byte(celguardDir), []byte("/celguard-bin"))
		}
		name := filepath.Base(f)
		if f == decisions {
			name = "celguard-decisions.jsonl"
		} else if strings.HasSuffix(f, "logs.json") {
			name = "gemini-logs.json"
		}
		writeFile(t, filepath.Join(dir, name), string(data))
	}
	writeFile(t, filepath.Join(recordsDir, "policy.yaml"), e2ePolicy)
	writeFile(t, filepath.Join(recordsDir, "VERSIONS"), fmt.Sprintf(
		"# The host versions that wrote these records (hooks/hostse2e -update-records).\nclaude-code %s\ncodex %s\ngemini %s\n",
		claudeVersion, codexVersion, geminiVersion))
}

// rewrittenLive are the call decisions a replay of the host's record
// cannot reproduce, by HOST/SCENARIO: the live verdict and the replayed
// one. The hosts record what ran and what the model read: after
// celguard's rewrite (package replay's TestHostRecordsMatchLive lists the
// same).
var rewrittenLive = map[string][2]string{
	"claude-code/redact": {"after modify", "after allow"},
	"codex/redact":       {"after modify", "after allow"},
	"gemini/redact":      {"after modify", "after allow"},
	"gemini/modify":      {"before modify", "before allow"},
}

// compareReplay replays the transcript the host just wrote with the
// policy the hooks decided with, and compares its call decisions (phase
// and verdict) with those the hooks made live, which their decision log
// recorded: a host update that changes its records fails here, on every
// run of the suite.
func compareReplay(t *testing.T, hostName, scenario, home, policyFile, decisions string) {
	t.Helper()
	eng, err := replay.NewEngine(context.Background(), celguardcfg.Config{Policies: policies.Options{Explicit: []string{policyFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	replayed := map[string]int{}
	sessions := map[string]bool{}
	files := transcriptFiles(t, home)
	if len(files) == 0 {
		t.Fatalf("%s wrote no transcript under %s", hostName, home)
	}
	for _, f := range files {
		rf, err := replay.Open(f, "")
		if err != nil {
			t.Fatal(err)
		}
		if string(rf.Format) != hostName {
			t.Errorf("%s read as %s", filepath.Base(f), rf.Format)
		}
		err = eng.Replay(context.Background(), rf, func(o *replay.Outcome) error {
			if o.ReadErr != nil {
				t.Errorf("replay cannot read %s's record: %v", hostName, o.ReadErr)
			}
			if o.Decided && o.Decision.Phase.HasCall() {
				replayed[o.Decision.Phase.String()+" "+o.Decision.Verdict.String()]++
			}
			sessions[o.Event.Session] = true
			return nil
		})
		rf.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(decisions)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Session string `json:"session_id"`
			Phase   string `json:"phase"`
			Verdict string `json:"verdict"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("decision log: %v", err)
		}
		// The transcript's sessions only: doctor's probe has its own.
		if sessions[rec.Session] && (rec.Phase == "before" || rec.Phase == "after") {
			live[rec.Phase+" "+rec.Verdict]++
		}
	}
	if d, ok := rewrittenLive[hostName+"/"+scenario]; ok && live[d[0]] > 0 {
		live[d[0]]--
		if live[d[0]] == 0 {
			delete(live, d[0])
		}
		live[d[1]]++
	}
	if fmt.Sprint(replayed) != fmt.Sprint(live) {
		t.Errorf("celguard replay of %s's record decides %v; its hooks decided %v live", hostName, replayed, live)
	}
}

// readRecords reads every record the host wrote in a scenario whose
// decisions are not compared (a broken policy, a missing binary, a
// streamed answer): replay's reader must understand each of them.
func readRecords(t *testing.T, hostName, home string) {
	t.Helper()
	files := transcriptFiles(t, home)
	if len(files) == 0 {
		t.Errorf("%s wrote no transcript", hostName)
	}
	for _, f := range files {
		rf, err := replay.Open(f, "")
		if err != nil {
			t.Errorf("replay cannot open %s's record: %v", hostName, err)
			continue
		}
		for {
			_, err := rf.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("replay cannot read %s's record: %v", hostName, err)
				var re *replay.Error
				if !errors.As(err, &re) {
					break
				}
			}
		}
		rf.Close()
	}
}

// claudeProjectName is the name Claude Code gives a project's directory
// under ~/.claude/projects: its path with every character that is not a
// letter or a digit made a dash.
func claudeProjectName(dir string) string {
	return regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(dir, "-")
}

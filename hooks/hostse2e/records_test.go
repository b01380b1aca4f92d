package hostse2e

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

// recordScenarios are the scenarios whose records are kept: those the
// hooks decided with the e2e policy.
var recordScenarios = []string{"allow", "block", "modify", "redact"}

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
		data = bytes.ReplaceAll(data, []byte(root), []byte("/e2e"))
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

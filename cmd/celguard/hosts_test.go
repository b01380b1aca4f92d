package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/celguard/celguard/hooks"
)

// TestHelpNamesEveryHost: the help of the commands that take a host names
// every host of hooks' table, with install's settings file for each, so
// that a host added to the table cannot be missing from the help.
func TestHelpNamesEveryHost(t *testing.T) {
	sio := stdio{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	install := newHookInstallCmd(sio).Long
	for _, h := range hooks.HostTable() {
		for name, long := range map[string]string{"hook": newHookCmd(sio).Long, "hook install": install, "doctor": newDoctorCmd(sio).Long, "serve": newServeCmd(sio).Long} {
			if !strings.Contains(long, h.Name) {
				t.Errorf("the help of celguard %s does not name host %s", name, h.Name)
			}
		}
		if file := h.SettingsDir + "/" + h.SettingsFile; !strings.Contains(install, file) {
			t.Errorf("the help of celguard hook install does not name %s's settings file %s", h.Name, file)
		}
	}
}

// TestDocsCapabilityMatrix: docs/hooks.md shows the capability matrix as
// `celguard hosts` prints it (`go test ./cmd/celguard -run
// TestDocsCapabilityMatrix -update` rewrites the block).
func TestDocsCapabilityMatrix(t *testing.T) {
	var out strings.Builder
	sio := stdio{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard}
	if code := runHosts(nil, "text", sio); code != exitOK {
		t.Fatalf("celguard hosts exited %d", code)
	}
	const path = "../../docs/hooks.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- capability matrix: the output of celguard hosts; TestDocsCapabilityMatrix checks it -->\n```text\n"
	start := strings.Index(string(doc), marker)
	if start < 0 {
		t.Fatalf("%s has no capability matrix block (%q)", path, marker)
	}
	start += len(marker)
	end := strings.Index(string(doc[start:]), "```")
	if end < 0 {
		t.Fatalf("%s: the capability matrix block is not closed", path)
	}
	got, want := string(doc[start:start+end]), out.String()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(string(doc[:start])+want+string(doc[start+end:])), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/hooks.md's capability matrix is not what celguard hosts prints (go test ./cmd/celguard -run TestDocsCapabilityMatrix -update):\n%s", want)
}

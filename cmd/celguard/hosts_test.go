package main

import (
	"io"
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

package setup

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzInstall feeds arbitrary settings to Install: it never panics, what it
// writes is valid JSON with the same other top-level keys, and installing
// again changes nothing.
func FuzzInstall(f *testing.F) {
	f.Add([]byte(existingClaude))
	f.Add([]byte(`{"a": [1, 2], "hooks": {"Stop": [{"hooks": [{"command": "celguard hook codex"}]}]}}`))
	f.Add([]byte(`{"a":{"b":[{"c":"\u00e9"}]} , "a": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, host := range []string{"codex", "cursor"} {
			out, _, err := Install(host, data, "/bin/celguard hook "+host)
			if err != nil {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("%s: not JSON after install: %v\n%s", host, err, out)
			}
			again, changed, err := Install(host, out, "/bin/celguard hook "+host)
			if err != nil || changed || !bytes.Equal(again, out) {
				t.Fatalf("%s: a second install changed the file (%v):\n%s\n---\n%s", host, err, out, again)
			}
		}
	})
}

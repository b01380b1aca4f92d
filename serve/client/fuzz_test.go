package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/celguard/celguard/serve/client"
)

// FuzzCommandAnswer: whatever a server answers, the client's reader
// (the forwarding hook's) never panics, and what it accepts is a hook's answer: an exit
// code of 0, 1 or 2 and a stdout that is empty or JSON.
func FuzzCommandAnswer(f *testing.F) {
	for _, s := range []string{
		`{"stdout":"","stderr":"","exit":0}`,
		`{"stdout":"{\"decision\":\"block\"}\n","stderr":"","exit":0}`,
		`{"stdout":"","stderr":"celguard: no\n","exit":2}`,
		`{"stdout":"allow","stderr":"","exit":0}`,
		`{"stdout":"","stderr":"","exit":7}`,
		`{"stdout":""}`, `[]`, `null`, `<html>`, `{"stdout":"","stderr":"","exit":0,"x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := client.ParseCommandAnswer(body)
		if err != nil {
			return
		}
		if a.Exit < 0 || a.Exit > 2 {
			t.Fatalf("accepted exit %d", a.Exit)
		}
		if s := strings.TrimSpace(a.Stdout); s != "" && !json.Valid([]byte(s)) {
			t.Fatalf("accepted stdout %q", a.Stdout)
		}
	})
}

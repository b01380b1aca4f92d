package replay_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/celguard/celguard/replay"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/NAME, rewritten with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./replay -update rewrites it):\n%s", name, got)
	}
}

// TestRunHosts replays every record the real hosts wrote and renders the
// report in each format; the same input gives the same bytes.
func TestRunHosts(t *testing.T) {
	run := func() *replay.Report {
		eng := e2eEngine(t)
		r, err := replay.Run(context.Background(), eng, []string{hostRecords}, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := run()
	if len(r.Errors) != 0 {
		t.Errorf("records not read: %v", r.Errors)
	}
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer, *replay.Report) error
	}{
		{"hosts.json", func(b *bytes.Buffer, r *replay.Report) error { return replay.WriteJSON(b, r) }},
		{"hosts.txt", func(b *bytes.Buffer, r *replay.Report) error { return replay.WriteText(b, r) }},
		{"hosts.md", func(b *bytes.Buffer, r *replay.Report) error { return replay.WriteMarkdown(b, r) }},
	} {
		var b1, b2 bytes.Buffer
		if err := f.write(&b1, r); err != nil {
			t.Fatal(err)
		}
		if err := f.write(&b2, run()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Errorf("%s: two replays of the same records differ", f.name)
		}
		golden(t, f.name, b1.Bytes())
	}
}

package daemonwire

import (
	"encoding/hex"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/celguard/celguard/store/statedir"
)

func TestParseHookArgs(t *testing.T) {
	abs, _ := filepath.Abs("p.yaml")
	cases := []struct {
		args []string
		want []string // DaemonArgs("/s"); nil: ErrNotLean
	}{
		{[]string{"claude-code"}, []string{"--state-dir", "/s", "--timeout", "10s", "--keep-days", "7", "--max-state-bytes", "4194304"}},
		{[]string{"codex", "--approve", "--state-dir", "/x", "--policy", "p.yaml", "--fail-open", "--include=a", "--bundle", "minimal", "--monitor"},
			[]string{"--policy", abs, "--bundle", "minimal", "--include", "a", "--state-dir", "/s", "--fail-open", "--approve", "--monitor",
				"--timeout", "10s", "--keep-days", "7", "--max-state-bytes", "4194304"}},
		{[]string{"gemini", "--timeout", "1m30s", "--keep-days", "0", "--user-dir", "-"},
			[]string{"--user-dir", "-", "--state-dir", "/s", "--timeout", "1m30s", "--keep-days", "0", "--max-state-bytes", "4194304"}},
		{[]string{"claude-code", "--server", "http://x"}, nil},
		{[]string{"claude-code", "--decision-log", "/l"}, nil},
		{[]string{"claude-code", "--no-daemon"}, nil},
		{[]string{"claude-code", "-p", "x"}, nil},
		{[]string{"claude-code", "--include", "a,b"}, nil},
		{[]string{"claude-code", "--fail-open=false"}, nil},
		{[]string{"claude-code", "--timeout", "0s"}, nil},
		{[]string{"claude-code", "--policy"}, nil},
		{[]string{"claude-code", "extra"}, nil},
		{[]string{"../x"}, nil},
		{nil, nil},
	}
	for _, c := range cases {
		a, err := ParseHookArgs(c.args)
		if c.want == nil {
			if !errors.Is(err, ErrNotLean) {
				t.Errorf("%q: err = %v, want ErrNotLean", c.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if got := a.DaemonArgs("/s"); !slices.Equal(got, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// answerFixture is a signed answer as the daemon makes it, and its
// request.
func answerFixture(t testing.TB, manifest string) (*statedir.Key, HookParams, HookResult) {
	dir := t.TempDir()
	key, err := statedir.LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	nonce, _ := NewNonce()
	p := HookParams{Nonce: nonce, Host: "claude-code", Event: []byte(`{}`), WorkDir: "/w"}
	res := HookResult{Digest: "d", Version: "v", Manifest: manifest, Body: []byte(`{"stdout":"{\"decision\":\"block\"}","stderr":"","exit":0}`)}
	res.MAC = hex.EncodeToString(Sum(key, res.Answer(p)))
	return key, p, res
}

// TestAccept: a signed answer made without policies is accepted; any
// change to what the MAC covers, an answer without a manifest, and a
// stale manifest are not.
func TestAccept(t *testing.T) {
	key, p, res := answerFixture(t, "")
	if _, err := Accept(key, p, res); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(p HookParams, r HookResult) (HookParams, HookResult){
		"another nonce": func(p HookParams, r HookResult) (HookParams, HookResult) {
			p.Nonce, _ = NewNonce()
			return p, r
		},
		"another host":     func(p HookParams, r HookResult) (HookParams, HookResult) { p.Host = "codex"; return p, r },
		"another event":    func(p HookParams, r HookResult) (HookParams, HookResult) { p.Event = []byte(`{ }`); return p, r },
		"another work dir": func(p HookParams, r HookResult) (HookParams, HookResult) { p.WorkDir = "/v"; return p, r },
		"another body": func(p HookParams, r HookResult) (HookParams, HookResult) {
			r.Body = []byte(`{"stdout":"","stderr":"","exit":0}`)
			return p, r
		},
		"another digest":   func(p HookParams, r HookResult) (HookParams, HookResult) { r.Digest = "e"; return p, r },
		"another version":  func(p HookParams, r HookResult) (HookParams, HookResult) { r.Version = "w"; return p, r },
		"a manifest added": func(p HookParams, r HookResult) (HookParams, HookResult) { r.Manifest = NoManifest; return p, r },
		"no MAC":           func(p HookParams, r HookResult) (HookParams, HookResult) { r.MAC = ""; return p, r },
		"a MAC of the body": func(p HookParams, r HookResult) (HookParams, HookResult) {
			r.MAC = hex.EncodeToString(r.Body[:32])
			return p, r
		},
	} {
		p2, res2 := f(p, res)
		if _, err := Accept(key, p2, res2); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	key, p, res = answerFixture(t, NoManifest)
	if _, err := Accept(key, p, res); err == nil {
		t.Error("an answer without a manifest was accepted")
	}
	root, roots := tree(t)
	m, err := Snapshot(roots)
	must(t, err)
	key, p, res = answerFixture(t, m.Encode())
	if _, err := Accept(key, p, res); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, ".celguard", "new.yaml"), "x")
	if _, err := Accept(key, p, res); err == nil {
		t.Error("a stale manifest was accepted")
	}
}

// FuzzAccept: whatever a process on the socket answers, Accept never
// panics, and accepts nothing without the key's MAC.
func FuzzAccept(f *testing.F) {
	key, p, res := answerFixture(f, "")
	f.Add(res.MAC, "", string(res.Body))
	f.Add("00", NoManifest, `{"stdout":"","stderr":"","exit":0}`)
	f.Add("zz", "eyJyb290cyI6W119", `{"stdout":"x"}`)
	f.Fuzz(func(t *testing.T, mac, manifest, b string) {
		r := HookResult{Digest: "d", Version: "v", MAC: mac, Manifest: manifest, Body: []byte(b)}
		_, err := Accept(key, p, r)
		if err == nil && (mac != res.MAC || manifest != "" || b != string(res.Body)) {
			t.Fatalf("accepted a forged answer: mac %q manifest %q body %q", mac, manifest, b)
		}
	})
}

// FuzzDecodeManifest: a manifest decodes strictly or not at all, never
// panics, and one that decodes encodes back to itself.
func FuzzDecodeManifest(f *testing.F) {
	m, _ := Snapshot([]Root{{Path: "/nonexistent/celguard"}})
	f.Add(m.Encode())
	f.Add("")
	f.Add(NoManifest)
	f.Add("eyJyb290cyI6W3sicGF0aCI6Ii8ifV0sImVudHJpZXMiOltdfQ")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := DecodeManifest(s)
		if err != nil {
			return
		}
		back, err := DecodeManifest(m.Encode())
		if err != nil || !back.Equal(m) {
			t.Fatalf("%q: does not survive its encoding: %v", s, err)
		}
	})
}

// FuzzParseAnswer: the command answer parser never panics and accepts
// only the three fields with a hook's exit code.
func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte(`{"stdout":"","stderr":"","exit":0}`))
	f.Add([]byte(`{"stdout":"{}","stderr":"x","exit":2,"more":1}`))
	f.Add([]byte(`{"stdout":"not json","stderr":"","exit":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAnswer(b)
		if err == nil && (a.Exit < 0 || a.Exit > 2) {
			t.Fatalf("exit %d accepted", a.Exit)
		}
	})
}

// TestAcceptForgedBundleManifest: the manifest of a set with a bundle in
// force names the bundle's store file; once another bundle is in force
// there, an answer whose manifest was rewritten to leave the store out
// (so that its snapshot would still check) or to carry the new store's
// sum is refused: the MAC covers the manifest.
func TestAcceptForgedBundleManifest(t *testing.T) {
	root, roots := tree(t)
	storeFile := filepath.Join(root, "team.bundle.json")
	write(t, storeFile, `{"serial":1}`)
	withStore := append(roots, Root{Path: storeFile, Tree: true})
	m, err := Snapshot(withStore)
	must(t, err)
	key, p, res := answerFixture(t, m.Encode())
	if _, err := Accept(key, p, res); err != nil {
		t.Fatal(err)
	}
	write(t, storeFile, `{"serial":2}`)
	if _, err := Accept(key, p, res); err == nil {
		t.Fatal("a manifest of another bundle was accepted")
	}
	without, err := Snapshot(roots)
	must(t, err)
	now, err := Snapshot(withStore)
	must(t, err)
	for name, forged := range map[string]*Manifest{"the store left out": without, "the new store's sum": now} {
		if forged.Check() != nil {
			t.Fatalf("%s: the forgery does not even check", name)
		}
		r2 := res
		r2.Manifest = forged.Encode()
		if _, err := Accept(key, p, r2); err == nil || !strings.Contains(err.Error(), "MAC") {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}

package bundle

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/registrytest"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// signed builds testdata/team at serial and signs it with key.
func signed(t testing.TB, serial uint64, version string, key *Key) (archive, envelope []byte) {
	t.Helper()
	b, err := Build(context.Background(), "testdata/team", BuildOptions{Name: "team", Version: version, Serial: serial, Layer: "admin", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if key == nil {
		return b.Archive, nil
	}
	return b.Archive, envJSON(t, must(Sign(context.Background(), b, nil, key)))
}

func newStore(t testing.TB, pub *Key) *Store {
	return &Store{Dir: t.TempDir(), Name: "team", Layer: "admin", Trust: &TrustPolicy{Keys: []*Key{pub}}}
}

func serialOf(t testing.TB, s *Store) uint64 {
	t.Helper()
	v, err := s.Current(context.Background())
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	return v.Manifest.Serial
}

// TestOCIRegistry runs the rollout against a real registry: push, pull,
// update, a tag moved back to an older serial, signatures stripped or by
// another key, a tampered layer, the registry down, and two machines
// converging on the same bundle.
func TestOCIRegistry(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	priv, pub := keyPair(t)
	otherPriv, _ := keyPair(t)
	ref := "oci://" + reg.Addr() + "/celguard/team:stable"
	src, err := ParseSource(ref, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	oci := src.(*OCI)
	push := func(archive, envelope []byte) {
		t.Helper()
		if _, err := oci.Push(ctx, archive, envelope); err != nil {
			t.Fatalf("push: %v", err)
		}
	}
	update := func(s *Store) (*Result, error) { return s.Update(ctx, src) }

	a1, e1 := signed(t, 1, "v1", priv)
	push(a1, e1)
	machine := newStore(t, pub)
	if r, err := update(machine); err != nil || !r.Changed || r.Ref.Serial != 1 {
		t.Fatalf("first pull: %+v, %v", r, err)
	}
	if r, err := update(machine); err != nil || r.Changed {
		t.Fatalf("pull of the same tag: %+v, %v", r, err)
	}

	a2, e2 := signed(t, 2, "v2", priv)
	push(a2, e2)
	if r, err := update(machine); err != nil || !r.Changed || r.Ref.Serial != 2 || r.Ref.Version != "v2" {
		t.Fatalf("update: %+v, %v", r, err)
	}

	refuse := func(what string, code Code) {
		t.Helper()
		if _, err := update(machine); CodeOf(err) != code {
			t.Errorf("%s: Update = %v, want %s", what, err, code)
		}
		if got := serialOf(t, machine); got != 2 {
			t.Errorf("%s: serial %d in force, want 2 kept", what, got)
		}
		if d := machine.Decider(ctx, policy.LayerAdmin, LastGood, true); d.Blocked || d.Ref.Serial != 2 {
			t.Errorf("%s: last-good decider = %+v", what, d)
		}
		if d := machine.Decider(ctx, policy.LayerAdmin, Block, true); !d.Blocked {
			t.Errorf("%s: on-refused block does not block", what)
		}
	}
	push(a1, e1) // the tag moved back to serial 1, validly signed
	refuse("tag moved to an older serial", CodeRollback)
	a3, e3 := signed(t, 3, "v3", priv)
	push(a3, nil)
	refuse("signature stripped", CodeUnsigned)
	_, eOther := signed(t, 3, "v3", otherPriv)
	push(a3, eOther)
	refuse("signed with another key", CodeBadSignature)
	a4, _ := signed(t, 4, "v4", nil)
	push(a4, e3) // a good signature, of another archive
	refuse("signature of another archive", CodeSubject)
	a2b, _ := signed(t, 2, "v2b", priv)
	_, e2b := signed(t, 2, "v2b", priv)
	push(a2b, e2b)
	refuse("another bundle with the serial in force", CodeRollback)

	push(a3, e3)
	if r, err := update(machine); err != nil || r.Ref.Serial != 3 {
		t.Fatalf("update to 3: %+v, %v", r, err)
	}
	if d := machine.Decider(ctx, policy.LayerAdmin, Block, true); d.Blocked {
		t.Errorf("a good bundle after a refusal still blocks: %s", d.Reason)
	}

	// Two machines converge on the same bundle.
	second := newStore(t, pub)
	if _, err := update(second); err != nil {
		t.Fatal(err)
	}
	if a, b := machine.Status(ctx), second.Status(ctx); a.InForce == nil || b.InForce == nil || *a.InForce != *b.InForce {
		t.Errorf("two machines differ: %+v, %+v", a.InForce, b.InForce)
	}

	// The registry serves a tampered layer: a machine that has not
	// fetched it yet refuses it (oras-go checks the digest).
	blob := filepath.Join(reg.Storage, "docker/registry/v2/blobs/sha256", sha256Hex(a3)[:2], sha256Hex(a3), "data")
	tampered := append([]byte{}, a3...)
	tampered[len(tampered)-10] ^= 1
	if err := os.WriteFile(blob, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	third := newStore(t, pub)
	if _, err := update(third); CodeOf(err) != CodeMalformed {
		t.Errorf("tampered layer: %v", err)
	}
	if d := third.Decider(ctx, policy.LayerAdmin, LastGood, true); !d.Blocked {
		t.Error("a machine with no good bundle does not block")
	}

	// The registry is down: the last good bundle keeps deciding.
	reg.Stop()
	if _, err := update(machine); CodeOf(err) != CodeUnreachable {
		t.Errorf("registry down: %v", err)
	}
	if d := machine.Decider(ctx, policy.LayerAdmin, Block, true); d.Blocked || d.Ref.Serial != 3 {
		t.Errorf("registry down: decider = %+v", d)
	}
	if st := machine.Status(ctx); st.Unreachable == nil || st.Unreachable.Code != CodeUnreachable || st.InForce.Serial != 3 {
		t.Errorf("registry down: status = %+v", st)
	}
}

// TestStoreOnDisk: the last good bundle on disk is verified again when
// read, so a same-user change to it (an older bundle with its own valid
// signature, edited bytes) is refused rather than decided with.
func TestStoreOnDisk(t *testing.T) {
	ctx := context.Background()
	priv, pub := keyPair(t)
	a1, e1 := signed(t, 1, "v1", priv)
	a2, e2 := signed(t, 2, "v2", priv)
	s := newStore(t, pub)
	if _, err := s.Update(ctx, staticSource{a2, e2}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.load()
	st.Archive, st.Envelope = a1, e1 // an older good bundle put back
	s.save(st)
	if _, err := s.Current(ctx); CodeOf(err) != CodeRollback {
		t.Errorf("older bundle on disk: %v", err)
	}
	st.Archive, st.Envelope = a2, e2
	st.Archive = append([]byte{}, a2...)
	st.Archive[len(st.Archive)/2] ^= 1
	s.save(st)
	if _, err := s.Current(ctx); err == nil {
		t.Error("edited bundle on disk accepted")
	}
	if d := s.Decider(ctx, policy.LayerAdmin, LastGood, true); !d.Blocked {
		t.Error("edited bundle on disk still decides")
	}
	// Removing the key that signed it from the trust policy retires it.
	_, pub2 := keyPair(t)
	st.Archive = a2
	s.save(st)
	s.Trust = &TrustPolicy{Keys: []*Key{pub2}}
	if _, err := s.Current(ctx); CodeOf(err) != CodeBadSignature {
		t.Errorf("bundle of a retired key: %v", err)
	}
	// Another name is refused.
	other := &Store{Dir: s.Dir, Name: "other", Trust: &TrustPolicy{Keys: []*Key{pub}}}
	if _, err := other.Update(ctx, staticSource{a2, e2}); CodeOf(err) != CodeWrongBundle {
		t.Errorf("another bundle's name: %v", err)
	}
	user := &Store{Dir: t.TempDir(), Name: "team", Layer: "user", Trust: &TrustPolicy{Keys: []*Key{pub}}}
	if _, err := user.Update(ctx, staticSource{a2, e2}); CodeOf(err) != CodeWrongBundle {
		t.Errorf("an admin bundle for the user layer: %v", err)
	}
}

type staticSource struct{ archive, envelope []byte }

func (s staticSource) Fetch(context.Context, string, Limits) (*Fetched, error) {
	return &Fetched{Archive: s.archive, Envelope: s.envelope, Tag: sha256Hex(s.archive)}, nil
}
func (staticSource) String() string { return "static" }

// TestBlockSource: the stand-in for a bundle not in force compiles in
// every layer and blocks every call, and an allow rule elsewhere cannot
// lift it.
func TestBlockSource(t *testing.T) {
	allow := policy.Source{Name: "user/allow.yaml", Layer: policy.LayerRegistered, Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: allow-all
rules:
  - id: allow-all
    priority: 2000000
    verdict: allow
`)}
	for _, layer := range []policy.Layer{policy.LayerUser, policy.LayerAdmin} {
		set, err := compile.Compile([]policy.Source{BlockSource("team", layer, `no "good" bundle`), allow, policies.ToolClasses()})
		if err != nil {
			t.Fatalf("%s: %v", layer, err)
		}
		eng, err := eval.New(set)
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Read", Args: map[string]any{"file_path": "README.md"}})
		if err != nil || d.Verdict != policy.Block || d.Code != "bundle_unavailable" || !strings.Contains(d.Reason, `no "good" bundle`) {
			t.Errorf("%s: decision = %+v, %v", layer, d, err)
		}
	}
}

// TestHTTPS pulls over TLS with ETags.
func TestHTTPS(t *testing.T) {
	ctx := context.Background()
	priv, pub := keyPair(t)
	var archive, envelope atomic.Value
	a1, e1 := signed(t, 1, "v1", priv)
	archive.Store(a1)
	envelope.Store(e1)
	var gets, notModified atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/team.tar.gz":
			gets.Add(1)
			a := archive.Load().([]byte)
			etag := fmt.Sprintf(`"%s"`, sha256Hex(a))
			if r.Header.Get("If-None-Match") == etag {
				notModified.Add(1)
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", etag)
			w.Write(a)
		case "/team.tar.gz.dsse.json":
			e := envelope.Load().([]byte)
			if e == nil {
				http.NotFound(w, r)
				return
			}
			w.Write(e)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	src, err := ParseSource(srv.URL+"/team.tar.gz", srv.Client(), false)
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, pub)
	if r, err := s.Update(ctx, src); err != nil || r.Ref.Serial != 1 {
		t.Fatalf("first: %+v, %v", r, err)
	}
	if r, err := s.Update(ctx, src); err != nil || r.Changed || notModified.Load() != 1 {
		t.Fatalf("second: %+v, %v (304s: %d)", r, err, notModified.Load())
	}
	a2, e2 := signed(t, 2, "v2", priv)
	archive.Store(a2)
	envelope.Store(e2)
	if r, err := s.Update(ctx, src); err != nil || r.Ref.Serial != 2 {
		t.Fatalf("update: %+v, %v", r, err)
	}
	a3, _ := signed(t, 3, "v3", priv)
	archive.Store(a3)
	envelope.Store([]byte(nil))
	if _, err := s.Update(ctx, src); CodeOf(err) != CodeUnsigned {
		t.Errorf("no envelope: %v", err)
	}
	// A client that does not trust the server's certificate cannot fetch.
	untrusting, _ := ParseSource(srv.URL+"/team.tar.gz", &http.Client{}, false)
	if _, err := newStore(t, pub).Update(ctx, untrusting); CodeOf(err) != CodeUnreachable {
		t.Errorf("untrusted certificate: %v", err)
	}
	for _, bad := range []string{"http://example.com/team.tar.gz", "ftp://x", "oci://example.com/repo", "oci://example.com/repo:tag"} {
		_, err := ParseSource(bad, nil, true)
		if err == nil {
			t.Errorf("ParseSource(%q) accepted it", bad)
		}
	}
	if gets.Load() < 4 {
		t.Errorf("%d GETs", gets.Load())
	}
}

// TestStoreRootOwned: an admin store's file must be root's and writable by
// no one else, or it is not believed (a user who could write it could put
// an older bundle back with its own serial).
func TestStoreRootOwned(t *testing.T) {
	ctx := context.Background()
	priv, pub := keyPair(t)
	a, e := signed(t, 1, "v1", priv)
	s := newStore(t, pub)
	s.RootOwned = true
	_, err := s.Update(ctx, staticSource{a, e})
	if os.Geteuid() != 0 {
		// Written by this user: never believed, so never in force.
		if _, err := s.Current(ctx); CodeOf(err) != CodeRollback {
			t.Errorf("a store file of a user other than root: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Current(ctx); err != nil {
		t.Fatalf("root-owned store: %v", err)
	}
	if err := os.Chmod(s.file(), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Current(ctx); CodeOf(err) != CodeRollback {
		t.Errorf("a store file others can write: %v", err)
	}
	if d := s.Decider(ctx, policy.LayerAdmin, LastGood, true); !d.Blocked {
		t.Error("a store file others can write still decides")
	}
}

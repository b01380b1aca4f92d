package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/bundle"
	"github.com/celguard/celguard/internal/registrytest"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/serve"
)

// TestBundleReplicas: two replicas of celguard serve configured with the
// same mandatory bundle (a user-layer bundle from a real registry, each
// with its own state directory) block every call until a good bundle is
// in force, then converge on each bundle pushed, and report it in
// /v1/status and in their decisions.
func TestBundleReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := registrytest.Start(t)
	dir := t.TempDir()
	privPEM, pubPEM, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := bundle.ParseKey(privPEM)
	pubFile := filepath.Join(dir, "team.pub")
	os.WriteFile(pubFile, pubPEM, 0o644)
	ref := "oci://" + reg.Addr() + "/acme/policies:stable"
	src, err := bundle.ParseSource(ref, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(serial uint64, version string) {
		t.Helper()
		b, err := bundle.Build(ctx, "../bundle/testdata/team", bundle.BuildOptions{Name: "team", Version: version, Serial: serial, Layer: "user"})
		if err != nil {
			t.Fatal(err)
		}
		env, err := bundle.Sign(ctx, b, nil, key)
		if err != nil {
			t.Fatal(err)
		}
		envJSON, _ := json.Marshal(env)
		if _, err := src.(*bundle.OCI).Push(ctx, b.Archive, envJSON); err != nil {
			t.Fatal(err)
		}
	}
	type replica struct {
		cfg celguard.Config
		srv *serve.Server
		f   *fixture
	}
	var replicas []*replica
	for i := range 2 {
		cfg := celguard.Config{
			Policies:    policies.Options{Bundle: "none", UserDir: "-", ProjectDir: "-", TrustFile: "-"},
			JudgeFiles:  []string{},
			BundleFiles: []string{},
			Bundles: []bundle.LayerConfig{{Name: "team", Source: ref, PlainHTTP: true, Keys: []string{pubFile}, Mandatory: true,
				StateDir: filepath.Join(dir, "replica", string(rune('a'+i))), Interval: "1s"}},
		}
		srv, err := serve.New(serve.Config{Engine: cfg, Version: "test", OperatorToken: operatorToken})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		replicas = append(replicas, &replica{cfg: cfg, srv: srv, f: &fixture{t: t, srv: srv, url: ts.URL}})
	}
	decide := func(r *replica, command string) map[string]any {
		t.Helper()
		return r.f.do("POST", "/v1/sessions/s/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": command}}).json(t)
	}
	// No bundle yet, mandatory: every call is blocked.
	for _, r := range replicas {
		if d := decide(r, "ls"); d["verdict"] != "block" || d["code"] != "bundle_unavailable" {
			t.Errorf("before any bundle: %v", d)
		}
		if st := r.srv.Status(); len(st.Bundles) != 1 || !st.Bundles[0].Blocked || st.Bundles[0].InForce != nil {
			t.Errorf("status before any bundle: %+v", st.Bundles)
		}
	}
	// Both replicas pull on their own (WatchBundles) and converge.
	publish(1, "v1")
	for _, r := range replicas {
		go r.srv.WatchBundles(ctx)
	}
	converge := func(serial uint64) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for _, r := range replicas {
			for {
				st := r.srv.Status()
				if len(st.Bundles) == 1 && st.Bundles[0].InForce != nil && st.Bundles[0].InForce.Serial == serial &&
					strings.Contains(decide(r, "rm -rf /")["file"].(string), "/serial-"+string(rune('0'+serial))+"/") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a replica did not converge on serial %d: %+v", serial, st.Bundles)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		a, b := replicas[0].srv.Status(), replicas[1].srv.Status()
		if a.PolicyDigest != b.PolicyDigest || *a.Bundles[0].InForce != *b.Bundles[0].InForce {
			t.Errorf("replicas differ: %s %+v, %s %+v", a.PolicyDigest, a.Bundles[0].InForce, b.PolicyDigest, b.Bundles[0].InForce)
		}
	}
	converge(1)
	for _, r := range replicas {
		d := decide(r, "rm -rf /")
		if d["verdict"] != "block" || d["rule_id"] != "no-rm-root-or-home" || d["file"] != "bundle:team@v1/serial-1/no-rm.yaml" {
			t.Errorf("decision with the bundle: %v", d)
		}
		// Every decision names the bundles of the set that decided, even
		// one no rule of the bundle made.
		if d := decide(r, "ls"); d["verdict"] != "allow" || fmt.Sprint(d["bundles"]) != "[team@v1/serial-1]" {
			t.Errorf("ls with the bundle: %v", d)
		}
	}
	publish(2, "v2")
	converge(2)
	// /v1/status/details carries the bundle in force.
	st := replicas[0].f.op("GET", "/v1/status/details", nil).json(t)
	bs, _ := st["bundles"].([]any)
	if len(bs) != 1 || bs[0].(map[string]any)["in_force"].(map[string]any)["version"] != "v2" {
		t.Errorf("/v1/status/details bundles = %v", st["bundles"])
	}
	// The registry goes down: both keep deciding with serial 2.
	reg.Stop()
	for _, r := range replicas {
		if err := r.cfg.PullBundles(ctx)["team"]; bundle.CodeOf(err) != bundle.CodeUnreachable {
			t.Errorf("registry down: %v", err)
		}
		if d := decide(r, "rm -rf /"); d["file"] != "bundle:team@v2/serial-2/no-rm.yaml" {
			t.Errorf("registry down: %v", d)
		}
	}
}

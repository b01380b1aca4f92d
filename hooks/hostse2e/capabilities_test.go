package hostse2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/celguard/celguard/hooks"
)

// update rewrites the host capability matrix (hooks/capabilities.json) from
// what the hosts did, for the hosts and scenarios run.
var update = flag.Bool("update", false, "rewrite hooks/capabilities.json from what the hosts do")

// matrixFile is the shipped matrix, relative to this package.
var matrixFile = filepath.Join("..", "capabilities.json")

// recorder collects what each host did with each scenario's verdict: the
// cells of the capability matrix.
type recorder struct {
	// source is the rows' hooks.HostCapabilities.Source: "" for hosts
	// run, hooks.SourceDocumented for a host driven from its documentation.
	source string
	mu     sync.Mutex
	cells  map[string]map[string]hooks.Capability // host → phase/verdict → cell
	vers   map[string]string
}

func (r *recorder) add(host, version, phase, verdict string, c hooks.Capability) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cells == nil {
		r.cells, r.vers = map[string]map[string]hooks.Capability{}, map[string]string{}
	}
	if r.cells[host] == nil {
		r.cells[host] = map[string]hooks.Capability{}
	}
	c.Phase, c.Verdict = phase, verdict
	r.cells[host][phase+"/"+verdict] = c
	r.vers[host] = version
}

// finish checks the cells observed against the shipped matrix, or with
// -update writes them into it (the cells not run stay as they were).
func (r *recorder) finish(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Failed() && *update {
		t.Log("not updating the capability matrix: a scenario failed")
		return
	}
	// The file, not the matrix compiled in: several tests update it in
	// turn (TestHosts, TestCursorDocumented).
	var shipped hooks.CapabilityMatrix
	data, err := os.ReadFile(matrixFile)
	if err == nil {
		err = json.Unmarshal(data, &shipped)
	}
	if err != nil {
		t.Fatalf("reading %s: %v", matrixFile, err)
	}
	byHost := map[string]*hooks.HostCapabilities{}
	for i := range shipped.Hosts {
		byHost[shipped.Hosts[i].Host] = &shipped.Hosts[i]
	}
	for _, host := range slices.Sorted(maps.Keys(r.cells)) {
		h := byHost[host]
		if h == nil {
			shipped.Hosts = append(shipped.Hosts, hooks.HostCapabilities{Host: host})
			h = &shipped.Hosts[len(shipped.Hosts)-1]
			for i := range shipped.Hosts {
				byHost[shipped.Hosts[i].Host] = &shipped.Hosts[i]
			}
		}
		if !*update && h.Version != r.vers[host] {
			t.Errorf("capability matrix: %s was run at %s, the matrix is of %s: run go test ./hooks/hostse2e -update", host, r.vers[host], h.Version)
		}
		if !*update && h.Source != r.source {
			t.Errorf("capability matrix: %s's row is of source %q, the matrix says %q: run go test ./hooks/hostse2e -update", host, r.source, h.Source)
		}
		h.Version, h.Source = r.vers[host], r.source
		for _, key := range slices.Sorted(maps.Keys(r.cells[host])) {
			got := r.cells[host][key]
			i := slices.IndexFunc(h.Capabilities, func(c hooks.Capability) bool { return c.Phase == got.Phase && c.Verdict == got.Verdict })
			switch {
			case i < 0 && *update:
				h.Capabilities = append(h.Capabilities, got)
			case i < 0:
				t.Errorf("capability matrix: %s %s is not in hooks/capabilities.json (observed: %+v): run go test ./hooks/hostse2e -update", host, key, got)
			case h.Capabilities[i] != got && *update:
				h.Capabilities[i] = got
			case h.Capabilities[i] != got:
				t.Errorf("capability matrix: %s %s: the host now does %+v, hooks/capabilities.json says %+v: run go test ./hooks/hostse2e -update", host, key, got, h.Capabilities[i])
			}
		}
		slices.SortFunc(h.Capabilities, func(a, b hooks.Capability) int {
			if c := phaseOrder(a.Phase) - phaseOrder(b.Phase); c != 0 {
				return c
			}
			return verdictOrder(a.Verdict) - verdictOrder(b.Verdict)
		})
	}
	if !*update {
		return
	}
	order := hooks.Hosts()
	slices.SortFunc(shipped.Hosts, func(a, b hooks.HostCapabilities) int {
		return slices.Index(order, a.Host) - slices.Index(order, b.Host)
	})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(shipped); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(matrixFile, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", matrixFile)
}

func phaseOrder(p string) int {
	return slices.Index([]string{"before", "after", "output", "failure"}, p)
}

func verdictOrder(v string) int {
	return slices.Index([]string{"allow", "warn", "block", "ask", "halt", "modify", "policy", "binary"}, v)
}

// Package registrytest runs a real OCI registry for tests: the reference
// distribution registry (Debian's docker-registry package), found on PATH
// or installed with apt-get when the tests run as root (CI on a fresh
// Debian or Ubuntu machine), and otherwise failing with the command to
// run. The registry listens on 127.0.0.1 on a free port, keeps its blobs
// in a scratch directory (Storage) and is stopped when the test ends.
package registrytest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/celguard/celguard/internal/aptget"
)

// program is the reference registry and its package.
var program = aptget.Program{
	Names: []string{"docker-registry", "registry"}, Paths: []string{"/usr/bin/docker-registry"},
	Package: "docker-registry", What: "the OCI registry docker-registry",
}

// InstallCommand is what a user who is not root runs to provide the registry.
const InstallCommand = "sudo apt-get install -y docker-registry"

var (
	findOnce sync.Once
	binary   string
	findErr  error
)

// Binary returns the path of the registry, installing docker-registry when
// it is missing and the process runs as root.
func Binary() (string, error) {
	findOnce.Do(func() { binary, findErr = aptget.Find(program) })
	return binary, findErr
}

// Registry is a running registry.
type Registry struct {
	t   testing.TB
	bin string
	// Storage is the directory that holds the registry's content
	// (docker/registry/v2/blobs/sha256/...).
	Storage string
	config  string
	Port    int

	mu  sync.Mutex
	cmd *exec.Cmd
	out bytes.Buffer
}

// Start starts a registry for the test, stopped when the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &Registry{t: t, bin: bin, Storage: filepath.Join(dir, "storage"), config: filepath.Join(dir, "config.yml")}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  cache:
    blobdescriptor: ""
http:
  addr: 127.0.0.1:%d
`, r.Storage, r.Port)
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// Addr is the registry's host:port.
func (r *Registry) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Restart starts the registry again after Stop, on the same port and
// storage.
func (r *Registry) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return nil
	}
	r.out.Reset()
	cmd := exec.Command(r.bin, "serve", r.config)
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %v", r.bin, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + r.Addr() + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.cmd = cmd
				return nil
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("%s did not answer on %s: %s", r.bin, r.Addr(), aptget.Tail(r.out.Bytes()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the registry (the source becomes unreachable).
func (r *Registry) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Package browsertest runs a real, headless Chromium for the tests of the
// web console: Debian's chromium package, found on PATH or installed with
// apt-get when the tests run as root (internal/aptget, as redis-server
// and docker-registry are), and otherwise failing with the command to run.
// It is driven with chromedp over the DevTools protocol, on a pipe: the
// browser listens on no port, and it only ever loads the loopback server
// under test. Every browser is stopped when its test ends.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/celguard/celguard/internal/aptget"
)

// program is Debian's Chromium.
var program = aptget.Program{
	Names: []string{"chromium", "chromium-browser"}, Paths: []string{"/usr/bin/chromium"},
	Package: "chromium", What: "Chromium (Debian's chromium package)",
}

// InstallCommand is what a user who is not root runs to provide the browser.
const InstallCommand = "sudo apt-get install -y chromium"

var (
	findOnce sync.Once
	binary   string
	findErr  error
)

// Binary returns the path of chromium, installing it when it is missing
// and the process runs as root.
func Binary() (string, error) {
	findOnce.Do(func() { binary, findErr = aptget.Find(program) })
	return binary, findErr
}

// Version is what the browser says it is ("Chromium 156.0.8078.108 ...").
func Version() (string, error) {
	bin, err := Binary()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	// Debian's wrapper script may print a shell warning on stderr; the
	// version is stdout's first line.
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, nil
}

// Browser is a running headless browser.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Start starts a headless browser for the test, stopped when the test
// ends. It fails the test when no browser can be found, installed or
// started.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts, chromedp.ExecPath(bin), chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		// No network but the loopback server under test.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("no-proxy-server", true))
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	// The first action starts the browser, whose life is then its
	// context's: it must be ctx itself, not one with a deadline.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		t.Fatalf("cannot start %s: %v", bin, err)
	}
	b := &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	return b
}

// Context is the browser's first tab.
func (b *Browser) Context() context.Context { return b.ctx }

// NewTab opens another tab of the same browser (sharing its cookies),
// closed when the test ends.
func (b *Browser) NewTab(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("cannot open a tab: %v", err)
	}
	t.Cleanup(cancel)
	return ctx
}

package bundle

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/celguard/celguard/internal/fileowner"
	"github.com/celguard/celguard/policy"
)

// FileName is the name of a bundles file: the user's in their celguard
// configuration directory, the administrator's in /etc/celguard.
const FileName = "bundles.json"

// AdminFile is the administrator's bundles file. It, the keys it names and
// the state directory of its bundles must be owned by root and not
// writable by group or others, as the admin layer's policies.
const AdminFile = "/etc/celguard/" + FileName

// LayerConfig is one bundle a layer takes its policies from: an entry of
// a bundles file (docs/bundles.md).
//
//	{"bundles": [{"name": "acme", "source": "oci://registry.example.com/acme/policies:stable",
//	  "keys": ["keys/security-2026.pub"], "threshold": 1, "mandatory": true,
//	  "on_refused": "last-good", "interval": "10m"}]}
type LayerConfig struct {
	// Name is the bundle's name; a bundle of another name is refused.
	Name string `json:"name"`
	// Source is oci://HOST/REPO:TAG or https://URL.
	Source string `json:"source"`
	// Keys are the public key files (relative to the bundles file's
	// directory) and Threshold how many of them must have signed (0: 1).
	Keys      []string `json:"keys"`
	Threshold int      `json:"threshold,omitempty"`
	// Mandatory: while no good bundle is in force, every call is blocked
	// (bundle_unavailable). Without it the layer decides without the
	// bundle until one comes.
	Mandatory bool `json:"mandatory,omitempty"`
	// OnRefused: what decides after the source offered a bundle that was
	// refused: last-good (default) or block.
	OnRefused OnRefused `json:"on_refused,omitempty"`
	// Interval is how often celguard serve pulls (a Go duration; default
	// 5m). Machines without a server pull with celguard bundle pull.
	Interval string `json:"interval,omitempty"`
	// StateDir keeps the bundle in force (default: DefaultStateDir).
	StateDir string `json:"state_dir,omitempty"`
	// PlainHTTP allows HTTP to a registry on loopback; CAFile adds PEM
	// certificates to trust for the source's TLS.
	PlainHTTP bool   `json:"plain_http,omitempty"`
	CAFile    string `json:"ca_file,omitempty"`

	// Layer is user or admin: the file's (not a field of the file).
	Layer string `json:"-"`
	// File is the bundles file it came from.
	File string `json:"-"`
}

type configFile struct {
	Bundles []LayerConfig `json:"bundles"`
}

// DefaultFiles are the bundles files read by default: the user's (in
// userDir, or the user's configuration directory when userDir is empty;
// none when it is "-") and the administrator's.
func DefaultFiles(userDir, configDir string) []string {
	var out []string
	switch userDir {
	case "-":
	case "":
		if configDir != "" {
			out = append(out, filepath.Join(configDir, FileName))
		}
	default:
		out = append(out, filepath.Join(userDir, FileName))
	}
	return append(out, AdminFile)
}

// rootOwned refuses a file under /etc/celguard (or any admin path) that
// is not owned by root or is writable by group or others.
func rootOwned(fi fs.FileInfo) error {
	uid, ok := fileowner.UID(fi)
	if !ok || uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return errors.New("must be owned by root and not writable by group or others")
	}
	return nil
}

// LoadConfig reads bundles files; one that does not exist is skipped. The
// bundles of AdminFile (or of any file under /etc/celguard/) are the admin
// layer's, and that file must be root-owned; the others are the user's.
// Every entry is checked (ParseConfig).
func LoadConfig(paths ...string) ([]LayerConfig, error) {
	var out []LayerConfig
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bundles file %s: %w", p, err)
		}
		admin := strings.HasPrefix(p, "/etc/celguard/")
		fi, err := f.Stat()
		if err == nil && admin {
			err = rootOwned(fi)
		}
		var data []byte
		if err == nil {
			data, err = io.ReadAll(io.LimitReader(f, 1<<20))
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("bundles file %s: %w", p, err)
		}
		layer := "user"
		if admin {
			layer = "admin"
		}
		cs, err := ParseConfig(data, layer, p)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// ParseConfig parses a bundles file of layer (user or admin) at file: a
// JSON object {"bundles": [...]} with no unknown field; every entry needs
// a valid name, a source and a key, and names are unique.
func ParseConfig(data []byte, layer, file string) ([]LayerConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cf configFile
	if err := dec.Decode(&cf); err != nil {
		return nil, fmt.Errorf("bundles file %s: %w", file, err)
	}
	seen := map[string]bool{}
	for i := range cf.Bundles {
		c := &cf.Bundles[i]
		c.Layer, c.File = layer, file
		bad := func(format string, args ...any) error {
			return fmt.Errorf("bundles file %s: bundle %d (%s): %s", file, i+1, c.Name, fmt.Sprintf(format, args...))
		}
		switch {
		case !ValidName(c.Name):
			return nil, bad("name must match %s", nameRE())
		case seen[c.Name]:
			return nil, bad("named twice")
		case c.Source == "":
			return nil, bad("no source")
		case len(c.Keys) == 0:
			return nil, bad("no keys: a bundle is only loaded when signed by keys you name")
		case c.Threshold < 0 || c.Threshold > len(c.Keys):
			return nil, bad("threshold %d with %d keys", c.Threshold, len(c.Keys))
		}
		seen[c.Name] = true
		if _, err := ParseOnRefused(string(c.OnRefused)); err != nil {
			return nil, bad("%v", err)
		}
		if c.Interval != "" {
			if d, err := time.ParseDuration(c.Interval); err != nil || d < time.Second {
				return nil, bad("interval %q must be a duration of 1s or more", c.Interval)
			}
		}
		if _, err := ParseSource(c.Source, nil, c.PlainHTTP); err != nil {
			return nil, bad("%v", err)
		}
	}
	return cf.Bundles, nil
}

// path resolves p relative to the bundles file's directory.
func (c *LayerConfig) path(p string) string {
	if filepath.IsAbs(p) || c.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.File), p)
}

// admin reports whether c is the admin layer's.
func (c *LayerConfig) admin() bool { return c.Layer == "admin" }

// PolicyLayer is the layer c feeds.
func (c *LayerConfig) PolicyLayer() policy.Layer {
	if c.admin() {
		return policy.LayerAdmin
	}
	return policy.LayerUser
}

// IntervalOr is c's pull interval, or def when it has none.
func (c *LayerConfig) IntervalOr(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(c.Interval); err == nil && d > 0 {
		return d
	}
	return def
}

// Store returns the store of c's bundle, with its trust policy. For the
// admin layer the key files must be root-owned.
func (c *LayerConfig) Store() (*Store, error) {
	tp := &TrustPolicy{Threshold: c.Threshold}
	for _, k := range c.Keys {
		file := c.path(k)
		if c.admin() {
			fi, err := os.Stat(file)
			if err == nil {
				err = rootOwned(fi)
			}
			if err != nil {
				return nil, wrap(CodeKey, err, "key %s of admin bundle %s", file, c.Name)
			}
		}
		key, err := LoadKey(file)
		if err != nil {
			return nil, err
		}
		tp.Keys = append(tp.Keys, key)
	}
	if err := tp.check(); err != nil {
		return nil, err
	}
	dir, err := c.stateDir()
	if err != nil {
		return nil, err
	}
	return &Store{Dir: dir, Name: c.Name, Layer: c.Layer, Trust: tp, RootOwned: c.admin()}, nil
}

// stateDir is the directory of c's store.
func (c *LayerConfig) stateDir() (string, error) {
	if c.StateDir == "" {
		return DefaultStateDir(c.Layer)
	}
	return c.path(c.StateDir), nil
}

// Paths are the files, besides the bundles file c came from, that what c
// contributes to its layer (Decide) is read from: its key files and its
// store's file, absolute. Decide reads nothing else: no clock, no network
// (pulls write the store's file; Decide verifies what is in it again on
// every read), so the same bytes, owners and modes in these files and the
// bundles file give the same Decider. A snapshot of them tells a reader
// that does not verify bundles itself (the lean hook client) whether the
// bundle in force changed.
func (c *LayerConfig) Paths() ([]string, error) {
	var out []string
	for _, k := range c.Keys {
		out = append(out, c.path(k))
	}
	dir, err := c.stateDir()
	if err != nil {
		return nil, err
	}
	out = append(out, (&Store{Dir: dir, Name: c.Name}).file())
	for i, p := range out {
		if out[i], err = filepath.Abs(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// OpenSource returns c's source, with an HTTP client that trusts CAFile too.
func (c *LayerConfig) OpenSource() (Source, error) {
	caFile := ""
	if c.CAFile != "" {
		caFile = c.path(c.CAFile)
	}
	client, err := HTTPClient(caFile)
	if err != nil {
		return nil, err
	}
	return ParseSource(c.Source, client, c.PlainHTTP)
}

// HTTPClient is the client bundles are fetched with: a 60-second timeout,
// and TLS 1.2 or later trusting the PEM certificates of caFile besides the
// system's when caFile is not "".
func HTTPClient(caFile string) (*http.Client, error) {
	client := &http.Client{Timeout: 60 * time.Second}
	if caFile == "" {
		return client, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	client.Transport = tr
	return client, nil
}

// Decide is what c's bundle contributes to its layer now: Decider's answer,
// or, when the store cannot even be opened (a key missing), a block of
// every call if c is mandatory and nothing otherwise. The error says why
// the bundle is not in force (nil when it is).
func (c *LayerConfig) Decide(ctx context.Context) (Decider, error) {
	on, _ := ParseOnRefused(string(c.OnRefused))
	st, err := c.Store()
	if err != nil {
		d := Decider{Reason: fmt.Sprintf("policy bundle %s is not in force: %v", c.Name, err)}
		if c.Mandatory {
			d.Sources, d.Blocked = []policy.Source{BlockSource(c.Name, c.PolicyLayer(), d.Reason)}, true
		}
		return d, err
	}
	d := st.Decider(ctx, c.PolicyLayer(), on, c.Mandatory)
	if d.Ref == nil {
		return d, errors.New(d.Reason)
	}
	return d, nil
}

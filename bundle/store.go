package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/policy"
)

// OnRefused says what decides when the source offers a bundle that is
// refused (unsigned, badly signed, older, malformed): the last good
// bundle, or a block of every call until a good one comes. An unreachable
// source is not a refusal: the last good bundle keeps deciding.
type OnRefused string

// The OnRefused settings.
const (
	LastGood OnRefused = "last-good"
	Block    OnRefused = "block"
)

// ParseOnRefused parses last-good (the default, for "") or block.
func ParseOnRefused(s string) (OnRefused, error) {
	switch OnRefused(s) {
	case "", LastGood:
		return LastGood, nil
	case Block:
		return Block, nil
	}
	return "", fmt.Errorf("on-refused must be last-good or block, not %q", s)
}

// Store keeps the bundle in force for one bundle name in a directory, as
// one file NAME.bundle.json written atomically: the archive and envelope
// last verified, the serial in force (never lowered), the source's tag,
// and the last refusal. The directory must be as protected as the layer
// it feeds: root-owned for the admin layer (docs/bundles.md).
type Store struct {
	Dir  string
	Name string
	// Layer, when set, is the layer the bundle must be meant for.
	Layer string
	Trust *TrustPolicy
	// Limits bound the archives accepted (default: DefaultLimits).
	Limits Limits
	// Now is the clock (default: time.Now).
	Now func() time.Time
	// RootOwned requires the store's file to be owned by root and not
	// writable by group or others before it is believed (the admin layer's):
	// a file the user could write could be swapped for an older one with
	// its own state.
	RootOwned bool
}

// state is the store's file.
type state struct {
	Name string `json:"name"`
	// Serial is the highest serial ever accepted: the one in force.
	Serial   uint64          `json:"serial"`
	Archive  []byte          `json:"archive"`
	Envelope json.RawMessage `json:"envelope"`
	Source   string          `json:"source,omitempty"`
	Tag      string          `json:"tag,omitempty"`
	Updated  time.Time       `json:"updated"`
	// Checked is the last time the source answered.
	Checked time.Time `json:"checked"`
	// Refused is the last refusal since the last good bundle.
	Refused *Problem `json:"refused,omitempty"`
	// Unreachable is the last failure to reach the source since it last
	// answered.
	Unreachable *Problem `json:"unreachable,omitempty"`
}

// Problem is a refusal or a failure, with its code.
type Problem struct {
	Code    Code      `json:"code"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

func (s *Store) file() string { return filepath.Join(s.Dir, s.Name+".bundle.json") }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) load() (*state, error) {
	lim := s.Limits
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	// Base64 makes the archive a third larger; the envelope is bounded too.
	data, err := readBounded(s.file(), lim.Archive*2+2*maxEnvelope)
	if errors.Is(err, fs.ErrNotExist) {
		return &state{Name: s.Name}, nil
	}
	if err != nil {
		return nil, err
	}
	if s.RootOwned {
		fi, err := os.Stat(s.file())
		if err == nil {
			err = rootOwned(fi)
		}
		if err != nil {
			return nil, wrap(CodeRollback, err, "%s", s.file())
		}
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, wrap(CodeMalformed, err, "%s", s.file())
	}
	if st.Name != s.Name {
		return nil, errorf(CodeWrongBundle, "%s holds bundle %q", s.file(), st.Name)
	}
	return &st, nil
}

func (s *Store) save(st *state) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.file(), data, 0o644)
}

// Current is the bundle in force: the last good one on disk, verified
// again with the trust policy (a file changed on disk, or a key removed
// from the policy since, makes it refused) and held to the serial in
// force. With none, the error is CodeNoGoodBundle or the refusal.
func (s *Store) Current(ctx context.Context) (*Verified, error) {
	st, err := s.load()
	if err != nil {
		return nil, err
	}
	return s.verifyState(ctx, st)
}

func (s *Store) verifyState(ctx context.Context, st *state) (*Verified, error) {
	if st.Archive == nil {
		return nil, errorf(CodeNoGoodBundle, "no %s bundle has been verified on this machine yet", s.Name)
	}
	v, err := Verify(ctx, st.Archive, st.Envelope, s.Trust, s.Limits)
	if err != nil {
		return nil, err
	}
	if err := s.check(v); err != nil {
		return nil, err
	}
	if v.Manifest.Serial != st.Serial {
		return nil, errorf(CodeRollback, "the bundle on disk has serial %d; serial %d is in force", v.Manifest.Serial, st.Serial)
	}
	return v, nil
}

func (s *Store) check(v *Verified) error {
	if v.Manifest.Name != s.Name {
		return errorf(CodeWrongBundle, "the source serves bundle %q, not %q", v.Manifest.Name, s.Name)
	}
	if s.Layer != "" && v.Manifest.Layer != s.Layer {
		return errorf(CodeWrongBundle, "bundle %q is meant for the %s layer, not %s", s.Name, v.Manifest.Layer, s.Layer)
	}
	return nil
}

// Result is what Update did.
type Result struct {
	// Ref is the bundle in force after the update.
	Ref Ref
	// Changed is true when a new bundle was accepted.
	Changed bool
}

// Update fetches from src and accepts the bundle when it verifies with
// the trust policy, is the store's name (and layer), and its serial is not
// lower than the one in force (the same serial must be the same archive).
// A refused bundle is never written; the refusal is recorded (Status) and
// returned. An unreachable source is returned as CodeUnreachable; in every
// failure the last good bundle stays in force.
func (s *Store) Update(ctx context.Context, src Source) (*Result, error) {
	st, err := s.load()
	if err != nil {
		return nil, err
	}
	prevTag := st.Tag
	if _, err := s.verifyState(ctx, st); err != nil {
		prevTag = "" // nothing good on disk: fetch it whole
	}
	f, err := src.Fetch(ctx, prevTag, s.Limits)
	if err != nil {
		return nil, s.fail(st, err)
	}
	st.Checked, st.Unreachable = s.now(), nil
	if f.NotModified {
		v, err := s.verifyState(ctx, st)
		if err != nil {
			return nil, s.fail(st, err)
		}
		return &Result{Ref: v.Manifest.Ref()}, s.save(st)
	}
	v, err := Verify(ctx, f.Archive, f.Envelope, s.Trust, s.Limits)
	if err == nil {
		err = s.check(v)
	}
	if err == nil && v.Manifest.Serial < st.Serial {
		err = errorf(CodeRollback, "%s offers serial %d; serial %d is in force", src, v.Manifest.Serial, st.Serial)
	}
	if err == nil && v.Manifest.Serial == st.Serial && sha256Hex(st.Archive) != v.ArchiveDigest() {
		err = errorf(CodeRollback, "%s offers another bundle with serial %d, the one in force", src, st.Serial)
	}
	if err != nil {
		return nil, s.fail(st, err)
	}
	changed := v.Manifest.Serial != st.Serial || sha256Hex(st.Archive) != v.ArchiveDigest()
	st.Serial, st.Archive, st.Envelope, st.Source, st.Tag = v.Manifest.Serial, f.Archive, f.Envelope, src.String(), f.Tag
	st.Refused = nil
	if changed {
		st.Updated = s.now()
	}
	if err := s.save(st); err != nil {
		return nil, err
	}
	return &Result{Ref: v.Manifest.Ref(), Changed: changed}, nil
}

// fail records err in the state (a refusal or an unreachable source) and
// returns it.
func (s *Store) fail(st *state, err error) error {
	p := &Problem{Code: CodeOf(err), Message: err.Error(), At: s.now()}
	if p.Code == CodeUnreachable {
		st.Unreachable = p
	} else {
		if p.Code == "" {
			p.Code = CodeMalformed
		}
		st.Refused = p
	}
	if serr := s.save(st); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// Status is what a store reports: the bundle in force (nil when none),
// where it came from, when it was last checked, and the last refusal and
// unreachable source since.
type Status struct {
	Name        string    `json:"name"`
	InForce     *Ref      `json:"in_force,omitempty"`
	Source      string    `json:"source,omitempty"`
	Updated     time.Time `json:"updated,omitzero"`
	Checked     time.Time `json:"checked,omitzero"`
	Refused     *Problem  `json:"refused,omitempty"`
	Unreachable *Problem  `json:"unreachable,omitempty"`
	// Error is why there is no bundle in force.
	Error string `json:"error,omitempty"`
}

// Status reports the store.
func (s *Store) Status(ctx context.Context) Status {
	out := Status{Name: s.Name}
	st, err := s.load()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Source, out.Updated, out.Checked, out.Refused, out.Unreachable = st.Source, st.Updated, st.Checked, st.Refused, st.Unreachable
	v, err := s.verifyState(ctx, st)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	r := v.Manifest.Ref()
	out.InForce = &r
	return out
}

// Decider is what a bundle layer decides with: the sources of the bundle
// in force, the one policy that blocks every call (Blocked), or nothing
// (a bundle that is not mandatory and not in force yet).
type Decider struct {
	Sources []policy.Source
	// Ref is the bundle in force (nil when there is none, or Blocked).
	Ref     *Ref
	Blocked bool
	// Reason says why no bundle is in force.
	Reason string
}

// Decider returns what the store's bundle contributes to layer: the
// sources of the bundle in force, named bundle:NAME@VERSION/serial-N/PATH so
// that a decision's file names the bundle; or, when there is no good
// bundle and mandatory is set, or after a refusal with on Block, a policy
// that blocks every call; or nothing.
func (s *Store) Decider(ctx context.Context, layer policy.Layer, on OnRefused, mandatory bool) Decider {
	st, err := s.load()
	var v *Verified
	if err == nil {
		v, err = s.verifyState(ctx, st)
	}
	block := mandatory && err != nil
	if err == nil && on == Block && st.Refused != nil {
		err = fmt.Errorf("%s (on_refused: block)", st.Refused.Message)
		block = true
	}
	if err != nil {
		reason := fmt.Sprintf("policy bundle %s is not in force: %v", s.Name, err)
		if !block {
			return Decider{Reason: reason}
		}
		return Decider{Sources: []policy.Source{BlockSource(s.Name, layer, reason)}, Blocked: true, Reason: reason}
	}
	r := v.Manifest.Ref()
	srcs := v.Sources()
	prefix := "bundle:" + s.Name + "/"
	for i := range srcs {
		srcs[i].Layer = layer
		srcs[i].Bundle = fmt.Sprintf("%s@%s/serial-%d", r.Name, r.Version, r.Serial)
		srcs[i].Name = "bundle:" + srcs[i].Bundle + "/" + strings.TrimPrefix(srcs[i].Name, prefix)
	}
	return Decider{Sources: srcs, Ref: &r}
}

// BlockSource is the policy that stands in for a bundle that is not in
// force: one mandatory rule that blocks every call with code
// bundle_unavailable and reason.
func BlockSource(name string, layer policy.Layer, reason string) policy.Source {
	id := "bundle-" + name + "-unavailable"
	quoted, _ := json.Marshal(reason) // a JSON string is a YAML one
	data := fmt.Sprintf(`apiVersion: celguard.dev/v1
kind: Policy
name: %s
enforcement: mandatory
rules:
  - id: %s
    priority: 1000000
    verdict: block
    reason: %s
    code: bundle_unavailable
`, id, id, quoted)
	return policy.Source{Name: "bundle:" + name + "/unavailable.yaml", Data: []byte(data), Layer: layer}
}

// DefaultStateDir is where a layer's bundles are kept by default: for the
// admin layer /var/lib/celguard/bundles (root-owned, as /etc/celguard), for
// the user layer $XDG_STATE_HOME/celguard/bundles (~/.local/state/...).
func DefaultStateDir(layer string) (string, error) {
	switch layer {
	case "admin":
		return "/var/lib/celguard/bundles", nil
	case "user":
		if d := os.Getenv("XDG_STATE_HOME"); d != "" {
			return filepath.Join(d, "celguard", "bundles"), nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, ".local", "state", "celguard", "bundles"), nil
	}
	return "", fmt.Errorf("layer %q must be admin or user", layer)
}

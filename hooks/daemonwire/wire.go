// Package daemonwire is the wire protocol of the hook's decision daemon
// (docs/hooks.md, "The decision daemon"): the socket and its directory,
// the JSON-RPC request and answer the hook clients exchange with it
// (rpc.go: Call, HookParams, HookResult), the headers of its HTTP route,
// the MAC of an answer under the state directory's key, the command
// answer, and the manifest of the policy files a decision was made with.
// Both ends link it: the daemon (cmd/celguard, serve), the full `celguard
// hook` client and the lean hook client (cmd/celguard-hook).
//
// It is a leaf on purpose: it imports the standard library (not net),
// the MCP Go SDK's jsonrpc package (the wire's encoding), store/statedir
// (the key) and internal/fileowner, nothing that compiles a policy, so
// that the lean client, which links it alone, starts in a fraction of the
// full binary's package initialisation, and is a static binary even when
// built with cgo on (issue 26).
package daemonwire

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/celguard/celguard/internal/fileowner"
	"github.com/celguard/celguard/store/statedir"
)

// The headers of the daemon's HTTP route, POST /v1/hooks/{host}?form=command
// (the hook clients use the JSON-RPC wire, whose HookParams and HookResult
// carry the same values).
const (
	// HeaderNonce is the request's fresh nonce (hex, NonceBytes).
	HeaderNonce = "Celguard-Daemon-Nonce"
	// HeaderWorkDir is the hook process's working directory: the
	// project whose layer decides (celguard.Guard.ForWorkDir).
	HeaderWorkDir = "Celguard-Daemon-Workdir"
	// HeaderDigest is, on the request, the policy digest the hook would
	// compute (empty when the client does not compute one: the lean
	// client, or an event decided without policies) and, on the answer,
	// the digest of the set that decided.
	HeaderDigest = "Celguard-Daemon-Digest"
	// HeaderVersion is the daemon's build, on the answer.
	HeaderVersion = "Celguard-Daemon-Version"
	// HeaderManifest is, on the answer, what the policy set that decided
	// was read from: empty when the answer was made without any policy (an
	// event celguard ignores, a session's end), NoManifest when the
	// daemon cannot say, else an encoded Manifest.
	HeaderManifest = "Celguard-Daemon-Manifest"
	// HeaderMAC is the answer's HMAC (hex): Sum.
	HeaderMAC = "Celguard-Daemon-Mac"
	// HeaderAgentVersion is, on the request, the hook's
	// CELGUARD_AGENT_VERSION, for the daemon's telemetry; the W3C trace
	// context of the hook's TRACEPARENT and TRACESTATE travels in the
	// standard traceparent and tracestate headers. Neither is under the
	// MAC, which authenticates the answer: they change what a decision's
	// telemetry says, never the decision (docs/telemetry.md).
	HeaderAgentVersion = "Celguard-Agent-Version"
)

// NoManifest is HeaderManifest's value when a policy decided and the
// daemon has no manifest of its sources (they changed while they were
// read, the files are too many): a client that cannot compute the digest
// itself must decide elsewhere.
const NoManifest = "-"

// NonceBytes is the length of a nonce.
const NonceBytes = 32

// domain separates the daemon's MACs from every other MAC under the state
// key (statedir.Key.Sum). v2 covers the work directory and the manifest.
const domain = "celguard daemon answer v2"

// DirName is the directory of the daemons' sockets in the state directory.
const DirName = "daemon"

// DefaultTimeout is `celguard hook --timeout`'s default (hooks.DefaultTimeout).
const DefaultTimeout = 10 * time.Second

// MaxEvent bounds the event a hook reads from stdin.
const MaxEvent = 64 << 20

// MaxAnswer bounds a hook endpoint's answer.
const MaxAnswer = 4 << 20

// maxSocketPath is the longest unix socket path every platform takes
// (sun_path is 104 bytes on the BSDs and macOS, 108 on Linux).
const maxSocketPath = 103

// NewNonce returns a fresh nonce, hex.
func NewNonce() (string, error) {
	b := make([]byte, NonceBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Answer is what the daemon signs: everything a client relies on.
type Answer struct {
	// Nonce, Host, Event and WorkDir are the request's.
	Nonce, Host string
	Event       []byte
	WorkDir     string
	// Digest, Version and Manifest are the answer's headers.
	Digest, Version, Manifest string
	// Body is the command answer (CommandAnswer, JSON).
	Body []byte
}

// Sum is the MAC of an answer: over the request's nonce, the host, the
// event's SHA-256, the work directory, the policy digest, the daemon's
// version, the manifest and the body, each length-prefixed
// (statedir.Key.Sum).
func Sum(key *statedir.Key, a Answer) []byte {
	ev := sha256.Sum256(a.Event)
	return key.Sum(domain, []byte(a.Nonce), []byte(a.Host), ev[:], []byte(a.WorkDir), []byte(a.Digest),
		[]byte(a.Version), []byte(a.Manifest), a.Body)
}

// Verify reports whether macHex is the MAC of the answer (Sum), in
// constant time.
func Verify(key *statedir.Key, macHex string, a Answer) bool {
	mac, err := hex.DecodeString(macHex)
	if err != nil || len(a.Nonce) != 2*NonceBytes {
		return false
	}
	ev := sha256.Sum256(a.Event)
	return key.Verify(mac, domain, []byte(a.Nonce), []byte(a.Host), ev[:], []byte(a.WorkDir), []byte(a.Digest),
		[]byte(a.Version), []byte(a.Manifest), a.Body)
}

// Socket is the socket of the daemon of state directory stateDir that id
// names (a digest of the hook's options: hooks run with other options have
// another daemon). It fails when the path would be too long for a unix
// socket; the hook then decides in process.
func Socket(stateDir, id string) (string, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(abs, DirName, id+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("the daemon's socket path %s is longer than %d bytes", p, maxSocketPath)
	}
	return p, nil
}

// ID is the id of the daemon for these hook arguments and environment
// values: a short digest.
func ID(parts ...string) string {
	h := sha256.New()
	var b []byte
	for _, p := range parts {
		// LEN:PART\x00, LEN in decimal (as fmt's "%d:%s\x00" wrote it: the
		// ids of running daemons do not change).
		b = append(strconv.AppendInt(b[:0], int64(len(p)), 10), ':')
		b = append(append(b, p...), 0)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Off reports whether the daemon is turned off: flag (--no-daemon) or
// CELGUARD_DAEMON=off (or 0, false, no).
func Off(flag bool) bool {
	switch strings.ToLower(os.Getenv("CELGUARD_DAEMON")) {
	case "off", "0", "false", "no":
		return true
	}
	return flag
}

// CheckDir checks that dir, the directory of a daemon's socket, is the
// user's own: a directory (not a symbolic link), owned by this user, that
// no one else may enter (mode 0700). With create it is made (0700) when
// missing. Anything else is an error, and the socket in it is not used: a
// directory someone else can write could hold a socket of theirs.
func CheckDir(dir string, create bool) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return err
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case fi.Mode().Perm() != 0o700:
		return fmt.Errorf("%s has mode %04o, not 0700: another user could reach the daemon's socket", dir, fi.Mode().Perm())
	}
	if runtime.GOOS == "windows" || !fileowner.Supported {
		return errors.New("the decision daemon needs unix file ownership")
	}
	uid, ok := fileowner.UID(fi)
	if !ok || int(uid) != os.Getuid() {
		return fmt.Errorf("%s is not owned by this user", dir)
	}
	return nil
}

// CommandAnswer is a hook endpoint's answer in the command form: what the
// hook command writes on stdout and stderr, and its exit code.
type CommandAnswer struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Exit   int    `json:"exit"`
}

// ParseAnswer decodes a command answer strictly: the three fields and no
// other, an exit code a hook may have (0, 1 or 2), and stdout empty or one
// JSON value.
func ParseAnswer(body []byte) (CommandAnswer, error) {
	if len(body) > MaxAnswer {
		return CommandAnswer{}, fmt.Errorf("larger than %d bytes", MaxAnswer)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return CommandAnswer{}, err
	}
	for _, k := range []string{"stdout", "stderr", "exit"} {
		if _, ok := raw[k]; !ok {
			return CommandAnswer{}, fmt.Errorf("no %q", k)
		}
	}
	var a CommandAnswer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return CommandAnswer{}, err
	}
	if a.Exit < 0 || a.Exit > 2 {
		return CommandAnswer{}, fmt.Errorf("exit code %d", a.Exit)
	}
	if s := strings.TrimSpace(a.Stdout); s != "" && !json.Valid([]byte(s)) {
		return CommandAnswer{}, errors.New("stdout is not JSON")
	}
	return a, nil
}

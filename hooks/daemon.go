package hooks

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/celguard/celguard/internal/fileowner"
	"github.com/celguard/celguard/store/statedir"
)

// The hook's decision daemon (docs/hooks.md, "The decision daemon"): a
// `celguard serve` of the user's own, on a unix socket in the state
// directory, that answers hook events exactly as `celguard hook` decides
// them in process, with the same state files. The hook trusts an answer
// only when it carries an HMAC, under the state directory's key, over the
// nonce the hook sent, the event, the policy digest and the answer: a
// process that binds the socket without the key cannot forge one.
//
// The headers of the protocol, on POST /v1/hooks/{host}?form=command.
const (
	// DaemonNonce is the request's fresh nonce (hex, DaemonNonceBytes).
	DaemonNonce = "Celguard-Daemon-Nonce"
	// DaemonWorkDir is the hook process's working directory: the
	// project whose layer decides (celguard.Guard.ForWorkDir).
	DaemonWorkDir = "Celguard-Daemon-Workdir"
	// DaemonDigest is, on the request, the policy digest the hook would
	// compute (empty for an event decided without policies) and, on the
	// answer, the digest of the set that decided.
	DaemonDigest = "Celguard-Daemon-Digest"
	// DaemonVersion is the daemon's build, on the answer.
	DaemonVersion = "Celguard-Daemon-Version"
	// DaemonMAC is the answer's HMAC (hex): DaemonSum.
	DaemonMAC = "Celguard-Daemon-Mac"
	// DaemonAgentVersion is, on the request, the hook's
	// CELGUARD_AGENT_VERSION, for the daemon's telemetry; the W3C trace
	// context of the hook's TRACEPARENT and TRACESTATE travels in the
	// standard traceparent and tracestate headers. Neither is under the
	// MAC, which authenticates the answer: they change what a decision's
	// telemetry says, never the decision (docs/telemetry.md).
	DaemonAgentVersion = "Celguard-Agent-Version"
)

// DaemonNonceBytes is the length of a nonce.
const DaemonNonceBytes = 32

// daemonDomain separates the daemon's MACs from every other MAC under the
// state key (statedir.Key.Sum).
const daemonDomain = "celguard daemon answer v1"

// DaemonDirName is the directory of the daemons' sockets in the state
// directory.
const DaemonDirName = "daemon"

// maxSocketPath is the longest unix socket path every platform takes
// (sun_path is 104 bytes on the BSDs and macOS, 108 on Linux).
const maxSocketPath = 103

// NewNonce returns a fresh nonce, hex.
func NewNonce() (string, error) {
	b := make([]byte, DaemonNonceBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// DaemonSum is the MAC of a daemon's answer: over the request's nonce, the
// host, the event's SHA-256, the policy digest, the daemon's version and
// the answer's body, each length-prefixed (statedir.Key.Sum).
func DaemonSum(key *statedir.Key, nonce, host string, event []byte, digest, version string, answer []byte) []byte {
	ev := sha256.Sum256(event)
	return key.Sum(daemonDomain, []byte(nonce), []byte(host), ev[:], []byte(digest), []byte(version), answer)
}

// VerifyDaemon reports whether macHex is the MAC of the answer
// (DaemonSum), in constant time.
func VerifyDaemon(key *statedir.Key, macHex, nonce, host string, event []byte, digest, version string, answer []byte) bool {
	mac, err := hex.DecodeString(macHex)
	if err != nil || len(nonce) != 2*DaemonNonceBytes {
		return false
	}
	ev := sha256.Sum256(event)
	return key.Verify(mac, daemonDomain, []byte(nonce), []byte(host), ev[:], []byte(digest), []byte(version), answer)
}

// DaemonSocket is the socket of the daemon of state directory stateDir
// that id names (a digest of the hook's options: hooks run with other
// options have another daemon). It fails when the path would be too long
// for a unix socket; the hook then decides in process.
func DaemonSocket(stateDir, id string) (string, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(abs, DaemonDirName, id+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("the daemon's socket path %s is longer than %d bytes", p, maxSocketPath)
	}
	return p, nil
}

// DaemonID is the id of the daemon for these hook arguments and
// environment values: a short digest.
func DaemonID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\x00", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// CheckDaemonDir checks that dir, the directory of a daemon's socket, is
// the user's own: a directory (not a symbolic link), owned by this user,
// that no one else may enter (mode 0700). With create it is made (0700)
// when missing. Anything else is an error, and the socket in it is not
// used: a directory someone else can write could hold a socket of theirs.
func CheckDaemonDir(dir string, create bool) error {
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

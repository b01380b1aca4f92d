package daemonwire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/celguard/celguard/store/statedir"
)

// ConnectTimeout bounds a client's wait to reach the daemon's socket.
const ConnectTimeout = 200 * time.Millisecond

// Request is one event a client asks the daemon about.
type Request struct {
	// Exe is the celguard binary whose daemon answers (its path with
	// symbolic links resolved, as `celguard hook` names itself).
	Exe string
	// Args are the hook's arguments (ParseHookArgs).
	Args HookArgs
	// Event is the host's event, as read from stdin.
	Event []byte
	// WorkDir is the hook's working directory, absolute.
	WorkDir string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Socket is the socket of the daemon `celguard hook` with a's flags asks
// (and starts), the celguard binary being exe (symbolic links resolved),
// and its state directory: the flag's, or statedir.DefaultStateDir.
func (a HookArgs) Socket(exe string, getenv func(string) string) (socket, stateDir string, err error) {
	stateDir = a.StateDir
	if stateDir == "" {
		if stateDir, err = statedir.DefaultStateDir(); err != nil {
			return "", "", err
		}
	}
	args := a.DaemonArgs(stateDir)
	id := ID(append(append([]string{exe}, IDEnv(getenv)...), args...)...)
	socket, err = Socket(stateDir, id)
	return socket, stateDir, err
}

// IDEnv is the environment a daemon's id covers, after the binary exe is
// prepended by the caller: the variables the layers are found by (HOME,
// XDG_CONFIG_HOME, XDG_STATE_HOME) and those a decision reads from the
// process (CLAUDE_PROJECT_DIR: where a Claude Code permission answer is
// remembered). The daemon has the environment of the hook that started it,
// so a hook with another value must have another daemon.
func IDEnv(getenv func(string) string) []string {
	return []string{getenv("HOME"), getenv("XDG_CONFIG_HOME"), getenv("XDG_STATE_HOME"), getenv("CLAUDE_PROJECT_DIR")}
}

// Ask asks the user's decision daemon for the answer to r's event, as the
// lean client does (cmd/celguard-hook), and returns it only when it proves
// itself; any error says why it does not, and the caller answers another
// way (the full `celguard hook`, which decides in process and starts the
// daemon). The daemon proves itself when:
//
//   - its socket is in the state directory's daemon/ (0700, the user's own),
//     under the id `celguard hook` computes for the same binary,
//     environment and flags (ID, DaemonArgs);
//   - its answer carries a MAC under the state directory's key over this
//     call's fresh nonce, the host, the event, the work directory, the
//     digest, the version, the manifest and the answer (Verify);
//   - a policy decided and the manifest of its sources is the snapshot
//     of the same paths now (Manifest.Check), or no policy decided;
//   - the answer is a well-formed command answer (ParseAnswer).
func Ask(ctx context.Context, r Request) (CommandAnswer, error) {
	getenv := r.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if Off(false) || getenv("CELGUARD_TELEMETRY") != "" {
		return CommandAnswer{}, errors.New("the daemon is off, or telemetry names this process")
	}
	if len(r.Event) > MaxEvent {
		return CommandAnswer{}, fmt.Errorf("the event is larger than %d bytes", MaxEvent)
	}
	if !filepath.IsAbs(r.WorkDir) || !filepath.IsAbs(r.Exe) {
		return CommandAnswer{}, errors.New("no absolute work directory or binary")
	}
	socket, stateDir, err := r.Args.Socket(r.Exe, getenv)
	if err != nil {
		return CommandAnswer{}, err
	}
	if err := CheckDir(filepath.Dir(socket), false); err != nil {
		return CommandAnswer{}, fmt.Errorf("directory: %w", err)
	}
	key, err := statedir.ReadKey(stateDir)
	if err != nil {
		return CommandAnswer{}, fmt.Errorf("key: %w", err)
	}
	nonce, err := NewNonce()
	if err != nil {
		return CommandAnswer{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.Args.Timeout+2*time.Second)
	defer cancel()
	p := HookParams{Nonce: nonce, Host: r.Args.Host, WorkDir: r.WorkDir, Event: r.Event}
	res, err := Call(ctx, socket, p)
	if err != nil {
		return CommandAnswer{}, fmt.Errorf("no answer: %w", err)
	}
	return Accept(key, p, res)
}

// Accept checks a daemon's answer res to the request p (Ask): its MAC,
// its manifest against the files now, and its form. It is the part of Ask
// a forged or stale answer meets.
func Accept(key *statedir.Key, p HookParams, res HookResult) (CommandAnswer, error) {
	ans := res.Answer(p)
	if !Verify(key, res.MAC, ans) {
		return CommandAnswer{}, errors.New("the answer's MAC does not check")
	}
	switch ans.Manifest {
	case "":
		// No policy decided: the answer does not depend on any file.
	case NoManifest:
		return CommandAnswer{}, errors.New("the daemon has no manifest of the policies that decided")
	default:
		m, err := DecodeManifest(ans.Manifest)
		if err != nil {
			return CommandAnswer{}, err
		}
		if err := m.Check(); err != nil {
			return CommandAnswer{}, fmt.Errorf("the policies changed since the daemon read them: %w", err)
		}
	}
	a, err := ParseAnswer(res.Body)
	if err != nil {
		return CommandAnswer{}, fmt.Errorf("not a hook answer: %w", err)
	}
	return a, nil
}

package daemonwire

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/celguard/celguard/store/statedir"
)

// HookArgs are the flags of `celguard hook HOST` that the lean client
// understands: those `celguard hook install` writes, and the hook's
// --timeout, --keep-days and --max-state-bytes. Anything else (a decision
// log, --server, --no-daemon, a flag it does not know, a form it does not
// read) is ErrNotLean: only the full hook can answer it.
type HookArgs struct {
	Host                          string
	Policies                      []string
	Bundle                        string
	Include, Exclude              []string
	UserDir, ProjectDir, StateDir string
	FailOpen, Approve, Monitor    bool
	Timeout                       time.Duration
	KeepDays                      int
	MaxStateBytes                 int64
}

// ErrNotLean is ParseHookArgs' error for a command line the lean client
// leaves to the full hook.
var ErrNotLean = errors.New("only the full hook answers this command line")

// ParseHookArgs reads `HOST [FLAGS]`, the arguments after `celguard
// hook`: the host first, then each flag as `--name value` or
// `--name=value` (a boolean alone). Relative paths are made absolute, as
// the full hook makes them for its daemon.
func ParseHookArgs(args []string) (HookArgs, error) {
	a := HookArgs{Timeout: DefaultTimeout, KeepDays: int(statedir.DefaultMaxAge / (24 * time.Hour)), MaxStateBytes: statedir.DefaultMaxStateBytes}
	if len(args) == 0 || !validHost(args[0]) {
		return a, fmt.Errorf("%w: no host first", ErrNotLean)
	}
	a.Host = args[0]
	for i := 1; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if !strings.HasPrefix(name, "--") {
			return a, fmt.Errorf("%w: %q", ErrNotLean, args[i])
		}
		name = name[2:]
		switch name {
		case "fail-open", "approve", "monitor":
			if hasValue {
				return a, fmt.Errorf("%w: --%s=", ErrNotLean, name)
			}
			switch name {
			case "fail-open":
				a.FailOpen = true
			case "approve":
				a.Approve = true
			default:
				a.Monitor = true
			}
			continue
		case "policy", "bundle", "include", "exclude", "user-dir", "project-dir", "state-dir", "timeout", "keep-days", "max-state-bytes":
		default:
			return a, fmt.Errorf("%w: --%s", ErrNotLean, name)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return a, fmt.Errorf("%w: --%s without a value", ErrNotLean, name)
			}
			i++
			value = args[i]
		}
		if err := a.set(name, value); err != nil {
			return a, err
		}
	}
	return a, nil
}

// set sets the flag name to value.
func (a *HookArgs) set(name, value string) error {
	abs := func(p string) (string, error) {
		if p == "" || p == "-" {
			return p, nil
		}
		return filepath.Abs(p)
	}
	var err error
	switch name {
	case "policy":
		var p string
		p, err = abs(value)
		a.Policies = append(a.Policies, p)
	case "bundle":
		a.Bundle = value
	case "include", "exclude":
		// pflag reads these as CSV: leave anything but a plain name to it.
		if value == "" || strings.ContainsAny(value, ",\"\n\r") {
			return fmt.Errorf("%w: --%s %q", ErrNotLean, name, value)
		}
		if name == "include" {
			a.Include = append(a.Include, value)
		} else {
			a.Exclude = append(a.Exclude, value)
		}
	case "user-dir":
		a.UserDir, err = abs(value)
	case "project-dir":
		a.ProjectDir, err = abs(value)
	case "state-dir":
		a.StateDir, err = abs(value)
	case "timeout":
		a.Timeout, err = time.ParseDuration(value)
		if err == nil && a.Timeout <= 0 {
			err = errors.New("not positive")
		}
	case "keep-days":
		a.KeepDays, err = strconv.Atoi(value)
		if err == nil && a.KeepDays < 0 {
			err = errors.New("negative")
		}
	case "max-state-bytes":
		a.MaxStateBytes, err = strconv.ParseInt(value, 10, 64)
		if err == nil && a.MaxStateBytes <= 0 {
			err = errors.New("not positive")
		}
	}
	if err != nil {
		return fmt.Errorf("%w: --%s %q: %v", ErrNotLean, name, value, err)
	}
	return nil
}

// validHost reports whether h can be a host's name (the daemon knows
// which ones are hosts).
func validHost(h string) bool {
	if h == "" || len(h) > 32 {
		return false
	}
	for _, r := range h {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

// DaemonArgs are the daemon's flags after `hook daemon --socket PATH`, as
// `celguard hook` computes them for its daemon and its DaemonID, with the
// state directory stateDir (the flag's, or the default one).
func (a HookArgs) DaemonArgs(stateDir string) []string {
	var out []string
	for _, p := range a.Policies {
		out = append(out, "--policy", p)
	}
	if a.Bundle != "" {
		out = append(out, "--bundle", a.Bundle)
	}
	for _, n := range a.Include {
		out = append(out, "--include", n)
	}
	for _, n := range a.Exclude {
		out = append(out, "--exclude", n)
	}
	if a.UserDir != "" {
		out = append(out, "--user-dir", a.UserDir)
	}
	if a.ProjectDir != "" {
		out = append(out, "--project-dir", a.ProjectDir)
	}
	if stateDir != "" {
		out = append(out, "--state-dir", stateDir)
	}
	if a.FailOpen {
		out = append(out, "--fail-open")
	}
	if a.Approve {
		out = append(out, "--approve")
	}
	if a.Monitor {
		out = append(out, "--monitor")
	}
	return append(out, "--timeout", a.Timeout.String(), "--keep-days", strconv.Itoa(a.KeepDays),
		"--max-state-bytes", strconv.FormatInt(a.MaxStateBytes, 10))
}

// StateStore is the state directory `celguard hook` with a's flags keeps
// its sessions in: --state-dir or statedir.DefaultStateDir, its files
// capped at --max-state-bytes, kept --keep-days (0: never removed).
func (a HookArgs) StateStore() (*statedir.Dir, error) {
	dir := a.StateDir
	if dir == "" {
		var err error
		if dir, err = statedir.DefaultStateDir(); err != nil {
			return nil, err
		}
	}
	sd := &statedir.Dir{Dir: dir, MaxBytes: a.MaxStateBytes, MaxAge: time.Duration(a.KeepDays) * 24 * time.Hour}
	if a.KeepDays == 0 {
		sd.MaxAge = -1
	}
	return sd, nil
}

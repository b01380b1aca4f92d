package daemonwire

import (
	"encoding/json"
	"slices"
)

//go:generate go run gen_ignored.go

// IgnoredHost is one host's events that celguard answers without deciding
// (hooks.KindIgnore) and the answer `celguard hook HOST` gives each of
// them: Stdout, nothing on stderr, exit code 0. The table of them
// (IgnoredHosts) is generated from the host table (hooks.HostInfo.Ignored)
// by `go generate ./hooks/daemonwire`, so that the lean hook client, which
// links no host protocol, can answer them itself; a test in package hooks
// fails when the two disagree.
type IgnoredHost struct {
	// Host is the host's name on the command line.
	Host string
	// Events are the event names, sorted.
	Events []string
	// Stdout is the answer on stdout.
	Stdout string
}

// IgnoredHosts is the generated table, in the order of hooks.Hosts; the
// caller may change what it returns.
func IgnoredHosts() []IgnoredHost {
	out := make([]IgnoredHost, len(ignoredHosts))
	for i, h := range ignoredHosts {
		h.Events = slices.Clone(h.Events)
		out[i] = h
	}
	return out
}

// eventFields are the event's fields that a host's decoder reads as
// strings whatever the event (hooks' decodeEvent and Cursor's): a value of
// another type fails the event there, so IgnoredAnswer leaves it to them.
var eventFields = [...]string{"hook_event_name", "session_id", "cwd", "tool_name", "conversation_id"}

// IgnoredAnswer is the answer `celguard hook HOST` gives event when it can
// be proven without the host's protocol: the event is one JSON object
// (as encoding/json reads it, which is how the hook reads it), its
// hook_event_name is one of the events the generated table lists for host
// (IgnoredHosts), and every field a host's decoder reads as a string
// (eventFields) is a string, null or absent. Then the hook decides nothing
// and answers the table's answer; its only other effect is the state
// directory's periodic cleanup (statedir.Dir.MaybeCleanup), the caller's
// to run. ok is false for anything else (a host the table does not know,
// an event it does not list, even one celguard would ignore, input that
// does not decode): the caller asks whoever can decide.
func IgnoredAnswer(host string, event []byte) (a CommandAnswer, ok bool) {
	var h *IgnoredHost
	for i := range ignoredHosts {
		if ignoredHosts[i].Host == host {
			h = &ignoredHosts[i]
			break
		}
	}
	if h == nil {
		return CommandAnswer{}, false
	}
	var v any
	if json.Unmarshal(event, &v) != nil {
		return CommandAnswer{}, false
	}
	m, isObject := v.(map[string]any)
	if !isObject {
		return CommandAnswer{}, false
	}
	for _, k := range eventFields {
		switch m[k].(type) {
		case nil, string:
		default:
			return CommandAnswer{}, false
		}
	}
	name, _ := m["hook_event_name"].(string)
	if _, found := slices.BinarySearch(h.Events, name); !found || name == "" {
		return CommandAnswer{}, false
	}
	return CommandAnswer{Stdout: h.Stdout}, true
}

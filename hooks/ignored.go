package hooks

import (
	"fmt"
	"slices"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks/daemonwire"
)

// IgnoredTable is what the lean hook client's table of ignored events
// (daemonwire.IgnoredHosts) must hold, computed from the host table: for
// each host, in the order of Hosts, its HostInfo.Ignored, sorted, and the
// answer this package gives each of them (Host.Encode of the decoded
// event, whatever the Options). `go generate ./hooks/daemonwire` writes it
// there. Its error says that an event named Ignored is one the host
// decides, or that an answer is not one the table can hold (the same
// bytes on stdout for every ignored event of the host, whatever the
// options, nothing on stderr, exit code 0).
func IgnoredTable() ([]daemonwire.IgnoredHost, error) {
	var out []daemonwire.IgnoredHost
	for _, info := range hostTable {
		row := daemonwire.IgnoredHost{Host: info.Name, Events: slices.Sorted(slices.Values(info.Ignored))}
		for i, name := range row.Events {
			for j, opts := range []Options{{}, {Approve: true, ApproveCommand: "celguard approve --state-dir X", NoApprovals: "x"}} {
				h := info.new(opts)
				// The fields that name a session on every host's protocol.
				data, err := marshal(map[string]any{"hook_event_name": name, "session_id": "s", "conversation_id": "s"})
				if err != nil {
					return nil, err
				}
				ev, err := h.Decode(data)
				if err != nil {
					return nil, fmt.Errorf("%s: ignored event %s does not decode: %w", info.Name, name, err)
				}
				if ev.Kind != KindIgnore {
					return nil, fmt.Errorf("%s: event %s is listed as ignored but is decided (%s)", info.Name, name, ev.Kind)
				}
				resp := h.Encode(ev, eval.Decision{})
				if resp.Stderr != "" || resp.Exit != 0 {
					return nil, fmt.Errorf("%s: the answer to %s has stderr %q and exit code %d", info.Name, name, resp.Stderr, resp.Exit)
				}
				if i == 0 && j == 0 {
					row.Stdout = string(resp.Stdout)
				} else if string(resp.Stdout) != row.Stdout {
					return nil, fmt.Errorf("%s: %s is answered %q, another ignored event %q", info.Name, name, resp.Stdout, row.Stdout)
				}
			}
		}
		out = append(out, row)
	}
	return out, nil
}

package learn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
	"github.com/celguard/celguard/store/statedir"
	"github.com/celguard/celguard/trust"
)

// Remembered grants come from two places:
//
//   - the rules `celguard approve --always` wrote (approved-ID.yaml and its
//     test approved-ID_test.yaml in the user's approved/ directory): the
//     test holds the exact call, which is read back;
//   - the grants of the sessions in the hooks' state directory (read
//     through its signed state, as `celguard approvals list` does): a grant
//     keeps the call's digest and a one-line summary, not its arguments,
//     so a call is read back from the summary only where the summary is
//     the whole of it (a shell command without quotes, a file path or a
//     URL, not cut short); a session grant of a whole rule names no call.
//     Neither is guessed: each is skipped with a note, and the decision
//     log (--from approvals) holds the calls those grants let run.

// ReadGrants reads the remembered grants at path: a directory of --always
// rules (one holding approved-*_test.yaml files), or a hooks state
// directory. An empty path reads the default ones: the user's approved/
// directory and the default state directory. The digest covers what was
// read (the rule files' contents, the grants).
func ReadGrants(ctx context.Context, path string) ([]Approval, string, policy.Diagnostics, error) {
	var dirs []string
	if path != "" {
		dirs = []string{path}
	} else {
		if d, err := trust.ConfigDir(); err == nil {
			dirs = append(dirs, filepath.Join(d, hooks.AlwaysDir))
		}
		if d, err := statedir.DefaultStateDir(); err == nil {
			dirs = append(dirs, d)
		}
	}
	var (
		apps []Approval
		ds   policy.Diagnostics
		sum  bytes.Buffer
	)
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if path == "" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("cannot read the grants in %s: %w", dir, err)
		}
		if !st.IsDir() {
			return nil, "", nil, fmt.Errorf("%s is not a directory of grants (a state directory or an approved/ directory)", dir)
		}
		tests, _ := filepath.Glob(filepath.Join(dir, "approved-*_test.yaml"))
		var (
			got []Approval
			gds policy.Diagnostics
		)
		if len(tests) > 0 || filepath.Base(dir) == hooks.AlwaysDir {
			got, gds, err = readAlwaysRules(tests, &sum)
		} else {
			got, gds, err = readStateGrants(ctx, dir, &sum)
		}
		if err != nil {
			return nil, "", nil, err
		}
		apps, ds = append(apps, got...), append(ds, gds...)
	}
	return apps, digestOf(sum.Bytes()), ds, nil
}

// readAlwaysRules reads the calls of --always rules' tests.
func readAlwaysRules(tests []string, sum *bytes.Buffer) ([]Approval, policy.Diagnostics, error) {
	slices.Sort(tests)
	var (
		apps []Approval
		ds   policy.Diagnostics
	)
	for _, f := range tests {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read %s: %w", f, err)
		}
		fmt.Fprintf(sum, "%d:%s%d:", len(f), f, len(data))
		sum.Write(data)
		s, err := policytest.ParseSuite(f, data)
		if err != nil {
			var pds policy.Diagnostics
			if errors.As(err, &pds) {
				for _, d := range pds {
					ds = append(ds, errorAt(CodeInvalid, d.Pos, "not the test of an --always rule: %s", d.Message))
				}
				continue
			}
			return nil, nil, err
		}
		for _, c := range s.Cases {
			for _, st := range c.Steps {
				if st.Before == nil {
					continue
				}
				apps = append(apps, Approval{Source: FromGrants, Pos: policy.Pos{File: f, Line: c.Line, Col: 1},
					Call: Call{Tool: st.Before.Tool, Args: st.Before.Args, Cwd: st.Before.Cwd}})
			}
		}
	}
	return apps, ds, nil
}

// readStateGrants reads the grants of a hooks state directory.
func readStateGrants(ctx context.Context, dir string, sum *bytes.Buffer) ([]Approval, policy.Diagnostics, error) {
	_, grants, warnings, err := hooks.Approvals(ctx, &statedir.Dir{Dir: dir})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the grants in %s: %w", dir, err)
	}
	slices.SortStableFunc(grants, func(a, b hooks.SessionGrant) int {
		if c := cmpStr(a.Session, b.Session); c != 0 {
			return c
		}
		return a.At.Compare(b.At)
	})
	var (
		apps []Approval
		ds   policy.Diagnostics
	)
	for _, w := range warnings {
		ds = append(ds, noteAt(CodeSkipped, policy.Pos{File: dir}, "%s", w))
	}
	for i, g := range grants {
		b, _ := json.Marshal(g)
		sum.Write(b)
		sum.WriteByte('\n')
		at := policy.Pos{File: filepath.Join(dir, statedir.FileName(g.Session)), Line: i + 1}
		if g.Subject != eval.SubjectCall {
			ds = append(ds, noteAt(CodeSkipped, at, "grant %s approves every %s call rule %s asks about for a session: it names no call (the decision log holds the calls it let run)", g.ID, g.Tool, g.Rule))
			continue
		}
		call, why := callFromSummary(g.Tool, g.Summary)
		if why != "" {
			ds = append(ds, noteAt(CodeSkipped, at, "grant %s: %s", g.ID, why))
			continue
		}
		apps = append(apps, Approval{Source: FromGrants, Pos: at, Call: call, Rule: g.Rule})
	}
	return apps, ds, nil
}

// summaryKeys are the argument a grant's summary is, per tool.
var summaryKeys = map[string]string{
	"Bash": "command", "run_shell_command": "command", "Shell": "command", "shell": "command",
	"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
	"write_file": "file_path", "replace": "file_path", "WebFetch": "url",
}

// callFromSummary reads a call back from a grant's summary (eval's
// "Tool: text"), or says why it cannot be.
func callFromSummary(tool, summary string) (Call, string) {
	key, ok := summaryKeys[tool]
	if !ok {
		return Call{}, "the summary of a " + tool + " call does not hold its arguments"
	}
	text, ok := strings.CutPrefix(summary, tool+": ")
	switch {
	case !ok || text == "":
		return Call{}, "its summary is not a call's"
	case strings.HasSuffix(text, "…"):
		return Call{}, "its summary was cut short"
	case key == "command" && strings.ContainsAny(text, "'\"\\`"):
		return Call{}, "its summary of a quoted command may have lost white space"
	case key != "command" && strings.ContainsAny(text, " \t"):
		return Call{}, "its summary of a path or URL may have lost white space"
	}
	return Call{Tool: tool, Args: map[string]any{key: text}}, ""
}

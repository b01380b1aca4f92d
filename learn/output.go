package learn

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/trust"
)

// DefaultClaudeSettings is the project's "don't ask again" file Claude
// Code writes, read by --from claude without a path.
const DefaultClaudeSettings = ".claude/settings.local.json"

// ParseFrom reads a source as the command line names it: KIND or
// KIND=PATH. Without a path, grants reads the default directories and
// claude the project's DefaultClaudeSettings; approvals and replay need
// one.
func ParseFrom(spec string) (Input, error) {
	kind, path, _ := strings.Cut(spec, "=")
	if !slices.Contains(Kinds(), kind) {
		return Input{}, fmt.Errorf("--from %s: the source must be one of %s, with =PATH", spec, strings.Join(Kinds(), ", "))
	}
	switch {
	case kind == FromApprovals && path == "":
		return Input{}, fmt.Errorf("--from approvals needs the decision log: --from approvals=FILE")
	case kind == FromReplay && path == "":
		return Input{}, fmt.Errorf("--from replay needs a recorded session: --from replay=FILE")
	case kind == FromClaude && path == "":
		path = DefaultClaudeSettings
	}
	return Input{Kind: kind, Path: path}, nil
}

// DefaultInputs are the sources read when none is named: the remembered
// grants, and the project's Claude Code settings when the file exists.
func DefaultInputs() []Input {
	in := []Input{{Kind: FromGrants}}
	if _, err := os.Stat(DefaultClaudeSettings); err == nil {
		in = append(in, Input{Kind: FromClaude, Path: DefaultClaudeSettings})
	}
	return in
}

// Write writes the policy and its suites into dir (created 0700), each
// file replaced atomically. It refuses the user's and the administrator's
// policy directories (and directories under them): a learnt rule takes
// effect only when a person moves it there after reading it.
func Write(dir string, r *Result) ([]string, error) {
	if r.Policy == nil {
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var protected []string
	if d, err := trust.ConfigDir(); err == nil {
		protected = append(protected, d)
	}
	protected = append(protected, "/etc/celguard")
	for _, p := range protected {
		for _, pp := range []string{p, resolved(p)} {
			for _, a := range []string{abs, resolved(abs)} {
				if rel, err := filepath.Rel(pp, a); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					return nil, fmt.Errorf("-o %s is in the policy directory %s: write the proposal elsewhere, review it, then move the rules you keep there yourself", dir, p)
				}
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", dir, err)
	}
	var written []string
	for _, f := range []struct {
		name string
		data []byte
	}{{PolicyFile, r.Policy}, {SuiteFile, r.Suite}, {BundleSuiteFile, r.BundleSuite}} {
		p := filepath.Join(dir, f.name)
		if err := atomicfile.Write(p, f.data, 0o600); err != nil {
			return written, fmt.Errorf("cannot write %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}

// resolved is p with the symbolic links of its longest existing prefix
// resolved, so that a link into a policy directory is seen as inside it.
func resolved(p string) string {
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// Summary writes what Learn proposed and dropped, for people.
func Summary(w io.Writer, r *Result) error {
	var b strings.Builder
	for _, s := range r.Sources {
		fmt.Fprintf(&b, "read %d approvals from %s %s (%s)\n", s.Approvals, s.Kind, s.Path, s.Digest)
	}
	fmt.Fprintf(&b, "proposed %d rules, dropped %d (checked against builtin:%s and %d hostile corpus calls)\n",
		len(r.Proposals), len(r.Dropped), r.Bundle, r.CorpusCalls)
	for _, p := range r.Proposals {
		fmt.Fprintf(&b, "  %s: %s (%d approved calls, %d near misses)\n", p.ID, p.Summary, len(p.Approved), len(p.NearMisses))
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(&b, "  dropped %s: %s\n", d.Proposal.ID, d.Reason)
	}
	if r.Policy == nil {
		b.WriteString("no rule to propose: nothing written\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set at build time for release builds, e.g.
//
//	go build -ldflags "-X main.version=v0.2.0 -X main.commit=$(git rev-parse HEAD) -X main.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/celguard
//
// Left empty, they are read from the build information the go command
// records: the module version (go install ...@v0.2.0), or the commit and its
// time of a build from a clone (go install ./cmd/celguard).
var (
	version string // the release, e.g. v0.2.0
	commit  string // the full commit hash
	date    string // the commit's (or the build's) time, RFC 3339
)

// buildInfo is what celguard knows of its own build.
type buildInfo struct {
	// Version is the release (v0.2.0), or "dev" for a build that is not one.
	Version string `json:"version"`
	// Commit is the commit it was built from; empty when unknown.
	Commit string `json:"commit,omitempty"`
	// Date is the commit's time; empty when unknown.
	Date string `json:"date,omitempty"`
	// Modified is true when the work tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go is the Go version it was built with.
	Go string `json:"go"`
}

// readBuildInfo is debug.ReadBuildInfo; tests replace it.
var readBuildInfo = debug.ReadBuildInfo

// currentBuild returns the -ldflags values, completed from the go
// command's build information.
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if bi, ok := readBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		vcs := commit == "" // -ldflags commit: the settings are not this build's
		for _, s := range bi.Settings {
			switch {
			case !vcs:
			case s.Key == "vcs.revision":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			case s.Key == "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" || (version == "" && b.Commit != "" && pseudoVersion.MatchString(b.Version)) {
		// A build from a clone: the go command's made-up version says no
		// more than the commit does.
		b.Version = "dev"
	}
	return b
}

// String is the one-line form --version prints after "celguard ":
// v0.2.0, or dev (commit 0123abcd4567, 2026-11-23T16:00:00Z, modified).
func (b buildInfo) String() string {
	var extra []string
	if b.Commit != "" {
		extra = append(extra, "commit "+shortCommit(b.Commit))
	}
	if b.Date != "" {
		extra = append(extra, b.Date)
	}
	if b.Modified {
		extra = append(extra, "modified")
	}
	if len(extra) == 0 {
		return b.Version
	}
	return fmt.Sprintf("%s (%s)", b.Version, strings.Join(extra, ", "))
}

// SourceRef is the git ref of celguard's repository this build came from,
// for a CI workflow to build the same celguard: the release tag, or the
// commit when the work tree was clean. ok is false for a build whose source
// cannot be named (a modified tree, a test binary).
func (b buildInfo) SourceRef() (ref string, ok bool) {
	switch {
	case b.Version != "dev" && !pseudoVersion.MatchString(b.Version) && !strings.Contains(b.Version, "+"):
		// a tag (v0.2.0), not a pseudo-version (v0.0.0-2026...-abcdef)
		// nor a modified tree's (+dirty)
		return b.Version, true
	case b.Commit != "" && !b.Modified:
		return b.Commit, true
	}
	return "", false
}

// pseudoVersion matches the versions the go command makes up for an
// untagged commit: vX.0.0-yyyymmddhhmmss-abcdefabcdef and the forms after a
// tag (vX.Y.Z-0.yyyy..., vX.Y.Z-pre.0.yyyy...).
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+.*)?$`)

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func newVersionCmd(sio stdio) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print celguard's version, the commit it was built from and when",
		Long: `Version prints the release (or "dev" for a build that is not one), the
commit celguard was built from, that commit's time, whether the work tree
had uncommitted changes, and the Go version. A build from a clone
(go install ./cmd/celguard) knows its commit; a release build is given its
version with -ldflags "-X main.version=v0.2.0 -X main.commit=... -X main.date=...".

--format json prints {"version", "commit", "date", "modified", "go"}.

Exit codes: 0, or 2 for an unknown --format.`,
		Example: `  celguard version
  celguard version --format json
  celguard --version`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b := currentBuild()
			switch format {
			case "text":
				fmt.Fprintf(sio.stdout, "celguard %s\n", b.Version)
				if b.Commit != "" {
					mod := ""
					if b.Modified {
						mod = " (modified)"
					}
					fmt.Fprintf(sio.stdout, "commit:  %s%s\n", b.Commit, mod)
				}
				if b.Date != "" {
					fmt.Fprintf(sio.stdout, "date:    %s\n", b.Date)
				}
				fmt.Fprintf(sio.stdout, "go:      %s\n", b.Go)
			case "json":
				enc := json.NewEncoder(sio.stdout)
				if err := enc.Encode(b); err != nil {
					return status(exitUsage)
				}
			default:
				fmt.Fprintf(sio.stderr, "celguard version: unknown --format %q: use text or json\n", format)
				return status(exitUsage)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

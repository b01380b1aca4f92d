package main

import (
	"runtime/debug"
	"testing"
)

// TestCurrentBuild: the version, commit and date come from -ldflags when
// given, else from the go command's build information; SourceRef names
// the tag or clean commit a CI workflow can build from.
func TestCurrentBuild(t *testing.T) {
	clone := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-23T16:00:00Z"},
		{Key: "vcs.modified", Value: "false"},
	}}
	dirty := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.modified", Value: "true"},
	}}
	tagged := &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}
	pseudo := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123160000-0123456789ab"}}
	tests := []struct {
		name                string
		bi                  *debug.BuildInfo
		ldVersion, ldCommit string
		wantString, wantRef string
		wantRefOK           bool
	}{
		{name: "no build info", wantString: "dev"},
		{name: "clone", bi: clone, wantString: "dev (commit 0123456789ab, 2026-11-23T16:00:00Z)",
			wantRef: "0123456789abcdef0123456789abcdef01234567", wantRefOK: true},
		{name: "modified clone", bi: dirty, wantString: "dev (commit 0123456789ab, modified)"},
		{name: "go install @tag", bi: tagged, wantString: "v0.3.1", wantRef: "v0.3.1", wantRefOK: true},
		{name: "go install @commit", bi: pseudo, wantString: "v0.0.0-20261123160000-0123456789ab"},
		{name: "clone, go1.24+ stamps a pseudo-version", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123160000-0123456789ab"},
			Settings: clone.Settings}, wantString: "dev (commit 0123456789ab, 2026-11-23T16:00:00Z)",
			wantRef: "0123456789abcdef0123456789abcdef01234567", wantRefOK: true},
		{name: "ldflags win", bi: dirty, ldVersion: "v1.0.0", ldCommit: "fedcba", wantString: "v1.0.0 (commit fedcba)",
			wantRef: "v1.0.0", wantRefOK: true},
	}
	defer func(v, c string) { version, commit, readBuildInfo = v, c, debug.ReadBuildInfo }(version, commit)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version, commit = tt.ldVersion, tt.ldCommit
			readBuildInfo = func() (*debug.BuildInfo, bool) { return tt.bi, tt.bi != nil }
			b := currentBuild()
			if got := b.String(); got != tt.wantString {
				t.Errorf("String() = %q, want %q", got, tt.wantString)
			}
			ref, ok := b.SourceRef()
			if ref != tt.wantRef || ok != tt.wantRefOK {
				t.Errorf("SourceRef() = %q, %v, want %q, %v", ref, ok, tt.wantRef, tt.wantRefOK)
			}
		})
	}
}

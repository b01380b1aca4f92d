//go:build unix

package fileowner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUIDIsTheCurrentUserForANewFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	uid, ok := UID(fi)
	if !ok || uid != uint32(os.Getuid()) {
		t.Fatalf("UID = %d, %v; want %d, true", uid, ok, os.Getuid())
	}
	if _, ok := UID(fakeInfo{fi}); ok {
		t.Fatal("UID of a FileInfo without a stat structure answered")
	}
}

type fakeInfo struct{ os.FileInfo }

func (fakeInfo) Sys() any { return nil }

package gobuildid

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ID read is the one the toolchain's own reader prints for the same
// executable (this test binary).
func TestReadMatchesGoToolBuildID(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	got, err := Read(exe)
	require.NoError(t, err)
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(out)), got)
}

// A copy of an executable keeps its ID; a file that is not an executable
// with a note has none.
func TestReadCopyAndNonExecutables(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	want, err := Read(exe)
	require.NoError(t, err)
	data, err := os.ReadFile(exe)
	require.NoError(t, err)
	dir := t.TempDir()
	cp := filepath.Join(dir, "copy")
	require.NoError(t, os.WriteFile(cp, data, 0o700))
	got, err := Read(cp)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	text := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o700))
	for _, p := range []string{text, filepath.Join(dir, "missing")} {
		_, err := Read(p)
		assert.ErrorIs(t, err, ErrNoBuildID, p)
	}
}

// note is one ELF note in little-endian order, padded.
func note(name string, typ uint32, desc string) []byte {
	pad := func(b []byte) []byte {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, pad([]byte(name))...)
	return append(b, pad([]byte(desc))...)
}

func TestParseNotes(t *testing.T) {
	id := "abc/def-GHI_123"
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"the Go note", note(noteName, noteType, id), id},
		{"after another note", append(note("GNU\x00", 3, "\x01\x02\x03"), note(noteName, noteType, id)...), id},
		{"another owner", note("GNU\x00", noteType, id), ""},
		{"another type", note(noteName, 1, id), ""},
		{"empty", nil, ""},
		{"truncated header", note(noteName, noteType, id)[:10], ""},
		{"truncated desc", note(noteName, noteType, id)[:20], ""},
		{"a size past the end", func() []byte {
			b := note(noteName, noteType, id)
			binary.LittleEndian.PutUint32(b[4:], 0xffffffff)
			return b
		}(), ""},
		{"an empty ID", note(noteName, noteType, ""), ""},
		{"a control byte", note(noteName, noteType, "ab\ncd"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseNotes(c.data, binary.LittleEndian)
			if c.want == "" {
				assert.True(t, errors.Is(err, ErrNoBuildID), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func FuzzParseNotes(f *testing.F) {
	f.Add(note(noteName, noteType, "x/y"))
	f.Add(append(note("GNU\x00", 3, "abc"), note(noteName, noteType, "id")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := parseNotes(data, binary.LittleEndian)
		if err != nil {
			require.ErrorIs(t, err, ErrNoBuildID)
			return
		}
		require.NotEmpty(t, id)
		require.LessOrEqual(t, len(id), maxID)
		require.True(t, printable([]byte(id)))
	})
}

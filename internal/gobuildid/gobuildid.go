// Package gobuildid reads the Go build ID the Go linker writes into an ELF
// executable (its .note.go.buildid note, the ID `go tool buildid` prints).
// The ID names a build by the hash of its inputs and of its linked output,
// so two executables with the same ID are the same build wherever they sit
// and whenever they were copied; the hook's compiled-set cache keys its
// records by it (hooks.SetCache). It reads only the section headers and the
// note, never the whole file.
//
// It is a package of its own because the toolchain's reader
// (cmd/internal/buildid) is internal to the Go distribution.
package gobuildid

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoBuildID is the error of an executable without a Go build ID: not an
// ELF file, built with an empty -buildid, or stripped of the note.
var ErrNoBuildID = errors.New("gobuildid: no Go build ID")

const (
	// noteSection is the section the Go linker writes the ID into.
	noteSection = ".note.go.buildid"
	// noteType is the type of the Go build ID note
	// (ELF_NOTE_GOBUILDID_TAG in the linker).
	noteType = 4
	// noteName is the owner of the Go linker's notes.
	noteName = "Go\x00\x00"
	// maxNote bounds the section read: a build ID is under 100 bytes.
	maxNote = 4096
	// maxID bounds the ID.
	maxID = 1024
)

// Read returns the Go build ID of the ELF executable at path, or an error
// wrapping ErrNoBuildID when it has none.
func Read(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoBuildID, err)
	}
	defer f.Close()
	s := f.Section(noteSection)
	if s == nil || s.Type != elf.SHT_NOTE {
		return "", fmt.Errorf("%w: no %s note in %s", ErrNoBuildID, noteSection, path)
	}
	if s.Size > maxNote {
		return "", fmt.Errorf("%w: %s is %d bytes", ErrNoBuildID, noteSection, s.Size)
	}
	data, err := s.Data()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoBuildID, err)
	}
	return parseNotes(data, f.ByteOrder)
}

// parseNotes finds the Go build ID among the ELF notes in data.
func parseNotes(data []byte, bo binary.ByteOrder) (string, error) {
	for len(data) > 0 {
		if len(data) < 12 {
			return "", fmt.Errorf("%w: a truncated note", ErrNoBuildID)
		}
		namesz, descsz, typ := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		data = data[12:]
		namePad, descPad := align4(namesz), align4(descsz)
		if namePad > uint64(len(data)) || descPad > uint64(len(data))-namePad {
			return "", fmt.Errorf("%w: a truncated note", ErrNoBuildID)
		}
		name, desc := data[:namesz], data[namePad:namePad+descsz]
		data = data[namePad+descPad:]
		if typ != noteType || string(name) != noteName {
			continue
		}
		if len(desc) == 0 || len(desc) > maxID || !printable(desc) {
			return "", fmt.Errorf("%w: a malformed build ID", ErrNoBuildID)
		}
		return string(desc), nil
	}
	return "", fmt.Errorf("%w: no build ID note", ErrNoBuildID)
}

// align4 rounds n up to a multiple of 4, the alignment of a note's fields.
func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// printable says b is printable ASCII, as every Go build ID is.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/celguard/celguard/policy"
)

// Schema is the manifest schema this package writes and reads.
const Schema = "celguard.bundle/v1"

// Manifest describes a bundle. It is manifest.json in the archive and the
// predicate of the signed statement.
type Manifest struct {
	Schema string `json:"schema"`
	// Name names the bundle ([a-z0-9][a-z0-9._-]*, at most 64 bytes); a
	// source is configured for one name.
	Name string `json:"name"`
	// Version is the team's label for it (v1.4.0, 2026-11-26...).
	Version string `json:"version"`
	// Serial orders the bundles of one name: a machine refuses a serial
	// lower than the one in force (anti-rollback).
	Serial uint64 `json:"serial"`
	// Created is when it was built (UTC).
	Created time.Time `json:"created"`
	// CelguardVersion is the version of celguard that built it.
	CelguardVersion string `json:"celguard_version"`
	// Digest is compile.Digest of the bundle's policies as they are loaded
	// in Layer (Sources).
	Digest string `json:"digest"`
	// Layer is the layer the bundle is meant for: user or admin.
	Layer string `json:"layer"`
	// Files lists every file of the archive but manifest.json, with its
	// size and SHA-256.
	Files []File `json:"files"`
	// Lint and Tests summarise the checks build ran (lint.json and the
	// suites under policies/ hold the details).
	Lint  LintSummary `json:"lint"`
	Tests TestSummary `json:"tests"`
}

// File is one file of a bundle.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// LintSummary counts the diagnostics build found (none is an error).
type LintSummary struct {
	Warnings int `json:"warnings"`
	Info     int `json:"info"`
}

// TestSummary counts the suites and cases build ran (all passed).
type TestSummary struct {
	Suites int `json:"suites"`
	Cases  int `json:"cases"`
}

// maxSerial is the largest serial: the signed statement carries the
// manifest as a JSON object whose numbers are exact up to 2^53.
const maxSerial = 1 << 53

var (
	nameRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })
	versionRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`) })
	digestRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	setDigestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
)

// ValidName reports whether s may name a bundle.
func ValidName(s string) bool { return nameRE().MatchString(s) }

// ParseManifest parses and validates manifest.json: unknown fields, a
// second document or any invalid value is a CodeManifest error.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, wrap(CodeManifest, err, "manifest.json")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(CodeManifest, "manifest.json: data after the manifest")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks every field of m.
func (m *Manifest) Validate() error {
	bad := func(format string, args ...any) error {
		return errorf(CodeManifest, "manifest.json: "+format, args...)
	}
	switch {
	case m.Schema != Schema:
		return bad("schema is %q; this celguard reads %q", m.Schema, Schema)
	case !nameRE().MatchString(m.Name):
		return bad("name %q must match %s", m.Name, nameRE())
	case !versionRE().MatchString(m.Version):
		return bad("version %q must match %s", m.Version, versionRE())
	case m.Serial == 0 || m.Serial > maxSerial:
		return bad("serial must be from 1 to 2^53")
	case m.Created.IsZero():
		return bad("created is missing")
	case !setDigestRE().MatchString(m.Digest):
		return bad("digest %q is not sha256:HEX", m.Digest)
	case len(m.CelguardVersion) > 128:
		return bad("celguard_version is longer than 128 bytes")
	case m.Lint.Warnings < 0 || m.Lint.Info < 0 || m.Tests.Suites < 0 || m.Tests.Cases < 0:
		return bad("negative counts")
	}
	if _, err := layerOf(m.Layer); err != nil {
		return bad("%v", err)
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		if err := checkMember(f.Path); err != nil {
			return err
		}
		if f.Path == manifestFile {
			return bad("files lists %s", manifestFile)
		}
		if seen[f.Path] {
			return bad("files lists %s twice", f.Path)
		}
		seen[f.Path] = true
		if f.Size < 0 || !digestRE().MatchString(f.SHA256) {
			return bad("file %s: bad size or sha256", f.Path)
		}
	}
	for _, need := range []string{lintFile, proofsFile} {
		if !seen[need] {
			return bad("files does not list %s", need)
		}
	}
	return nil
}

// layerOf parses a manifest's layer: a bundle is meant for the user or
// the admin layer.
func layerOf(s string) (policy.Layer, error) {
	switch s {
	case "user":
		return policy.LayerUser, nil
	case "admin":
		return policy.LayerAdmin, nil
	}
	return 0, fmt.Errorf("layer %q must be user or admin", s)
}

// PolicyLayer is the policy.Layer the bundle is meant for.
func (m *Manifest) PolicyLayer() policy.Layer {
	l, _ := layerOf(m.Layer)
	return l
}

// Ref is what names a bundle in force: its name, version, serial and
// digest (decisions, /v1/status and doctor report it).
type Ref struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Serial  uint64 `json:"serial"`
	Digest  string `json:"digest"`
}

// Ref returns the manifest's Ref.
func (m *Manifest) Ref() Ref {
	return Ref{Name: m.Name, Version: m.Version, Serial: m.Serial, Digest: m.Digest}
}

// String renders r as name version (serial N).
func (r Ref) String() string {
	return fmt.Sprintf("%s %s (serial %d)", r.Name, r.Version, r.Serial)
}

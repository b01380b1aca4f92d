package bundle

import (
	"errors"
	"fmt"
)

// Code is the stable code of a bundle error; docs/bundles.md lists every
// code and its fix.
type Code string

// The codes of bundle errors.
const (
	// CodeTooLarge: the archive, a file in it or all of them together are
	// over Limits. Fix: raise the limit, or split the set.
	CodeTooLarge Code = "bundle_too_large"
	// CodeMalformed: the archive is not a gzip-compressed tar of regular
	// files, or a file is missing, extra, duplicated or does not match the
	// manifest. Fix: rebuild it with celguard bundle build.
	CodeMalformed Code = "bundle_malformed"
	// CodeUnsafePath: a path in the archive is absolute, climbs out with
	// "..", or is not one a bundle holds. Fix: rebuild it with celguard
	// bundle build; never unpack it by hand.
	CodeUnsafePath Code = "bundle_unsafe_path"
	// CodeManifest: the manifest is not valid (unknown field or schema,
	// bad name, version, serial or layer). Fix: rebuild the bundle.
	CodeManifest Code = "bundle_manifest_invalid"
	// CodeLint: build found a diagnostic at error severity. Fix: celguard
	// lint the directory and fix what it reports.
	CodeLint Code = "bundle_lint_failed"
	// CodeTests: build ran the suites and one failed. Fix: celguard test
	// the directory.
	CodeTests Code = "bundle_tests_failed"
	// CodeUnsigned: there is no signature envelope, or it has no
	// signature. Fix: celguard bundle sign, and push or serve the envelope.
	CodeUnsigned Code = "bundle_unsigned"
	// CodeBadSignature: the envelope's signatures do not reach the trust
	// policy's threshold with its keys, or the envelope is malformed. Fix:
	// sign with enough of the configured keys, or configure the key that
	// signed.
	CodeBadSignature Code = "bundle_signature_invalid"
	// CodeSubject: the signed statement names another archive or another
	// manifest than the one fetched. Fix: sign the archive being served;
	// a registry or mirror serving something else is an attack.
	CodeSubject Code = "bundle_subject_mismatch"
	// CodeRollback: the bundle's serial is lower than the one in force, or
	// the same serial with other content. Fix: build with a higher
	// --serial; an older bundle served again is an attack.
	CodeRollback Code = "bundle_rollback"
	// CodeWrongBundle: the bundle's name or layer is not the one the
	// source is configured for. Fix: point the source at the right bundle.
	CodeWrongBundle Code = "bundle_wrong_name"
	// CodeUnreachable: the source could not be reached or answered an
	// error. The last good bundle keeps deciding.
	CodeUnreachable Code = "bundle_source_unreachable"
	// CodeKey: a key file cannot be read or is not a supported PEM key.
	// Fix: celguard bundle keygen writes one.
	CodeKey Code = "bundle_key_invalid"
	// CodeNoGoodBundle: no bundle has ever been verified on this machine,
	// so there is nothing to decide with. Fix: make the source reachable.
	CodeNoGoodBundle Code = "bundle_none_in_force"
)

// Error is a bundle error with its stable code.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf returns the code of err's bundle Error, or "" when it has none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

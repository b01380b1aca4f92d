// Package setup puts celguard's hooks into the agent hosts' settings files
// and checks them there: Install and SettingsPath (celguard hook install),
// CodexTrustEntries (what Codex needs to trust them), Doctor (celguard
// doctor) and the checks of the binary a hook runs (Executable,
// BinaryWarnings). Which hosts there are, where their settings live and
// which events celguard registers for are package hooks' host table
// (hooks.HostInfo).
//
// It is a package apart from hooks, which speaks the hosts' hook protocols
// each time a host calls celguard, so that imports go one way: setup reads
// hooks' host table, and hooks, which serve and the hook process link, holds
// no code that edits a settings file or runs a host's binary.
package setup

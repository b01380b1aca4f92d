package shell

import "strings"

// SafeChars are the bytes Quote leaves a word of unquoted, besides ASCII
// letters and digits: none of them is special to a POSIX shell or to bash
// in any place of a word. Every other byte (blanks, quotes, $, `, \, globs,
// ~, #, %, !, braces, operators, control and non-ASCII bytes) makes Quote
// quote the word. (zsh, with its default EQUALS option, reads a word that
// starts with = as a command's path; celguard's command lines are run by
// sh -c.)
const SafeChars = "-_./=:,+@"

// Quote returns s as one shell word that sh and bash read as the literal
// s: s itself when it is not empty and every byte of it is an ASCII
// letter, a digit or one of SafeChars, else s in single quotes, each single
// quote of s written '\”. It is the quoting of every command line
// celguard writes (hook commands, the commands it tells a person to run)
// and of the command line eval builds from an argv array.
//
// The word stands for s wherever an argument may stand. In the place of a
// command's name, a word NAME=value is read as an assignment and a
// reserved word (if, time, ...) as a keyword, quoted or not by Quote as
// anywhere else. s must not hold a NUL byte, which no shell word can.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unsafe reports whether Quote must quote a word holding r.
func unsafe(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(SafeChars, r))
}

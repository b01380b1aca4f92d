// Package fileowner reads the owner of a file from its os.FileInfo, for the
// checks that decide whether a file may be believed: the admin layer must be
// owned by root, the trust store by the user. It has a package of its own
// because the answer needs the platform's stat structure, which the packages
// that ask should not each reach for.
package fileowner

//go:build !race

package stdlib

// raceEnabled reports that the tests run under the race detector
// (race_test.go).
const raceEnabled = false

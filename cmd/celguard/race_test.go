//go:build race

package main

// raceEnabled reports whether the race detector is on: it makes each
// in-process decision of the full bundle many times slower.
const raceEnabled = true

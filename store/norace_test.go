//go:build !race

package store_test

// raceAllocSlack is 0 without the race detector (race_test.go).
const raceAllocSlack = 0

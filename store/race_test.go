//go:build race

package store_test

// raceAllocSlack is what the race detector adds to the allocations
// TestStoreAllocs counts: under it sync.Pool drops a quarter of what is
// put back at random (encoding/json's encoders among them), and its
// runtime allocates for itself (measured: 14 against 11 without it).
const raceAllocSlack = 6

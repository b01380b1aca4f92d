//go:build race

package eval

// raceAllocSlack is what the race detector adds to the allocations
// TestEncodeStateAllocs counts: under it sync.Pool drops a quarter of what
// is put back at random (encoding/json's encoders among them; measured: 4
// against 3 without it).
const raceAllocSlack = 2

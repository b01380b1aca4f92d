//go:build race

package stdlib

// raceEnabled reports that the tests run under the race detector, where
// sync.Pool drops what is put back at random: the regexp package's pooled
// machines are then made again at every match (TestFindSecretsMemoryBound).
const raceEnabled = true

//go:build !unix

package replay_test

import "time"

// cpuTime is unknown here: the benchmark reports wall-clock figures only.
func cpuTime() time.Duration { return 0 }

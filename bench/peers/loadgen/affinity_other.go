//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"time"
)

type cpuSet [16]uint64

func newCPUSet(cpus []int) *cpuSet { return &cpuSet{} }

func (s *cpuSet) list() []int { return nil }

var errNoAffinity = errors.New("CPU affinity needs Linux")

func affinity(int) (*cpuSet, error) { return nil, errNoAffinity }

func startOn(cmd *exec.Cmd, cpus *cpuSet) error {
	if cpus != nil {
		return errNoAffinity
	}
	return cmd.Start()
}

func pinProcess(*cpuSet) error { return errNoAffinity }

func procCPU(int) time.Duration { return 0 }

func procSwitches(int) int64 { return 0 }

func procRSS(int) int64 { return 0 }

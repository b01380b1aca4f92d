package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// cpuSet is a CPU affinity mask as sched_setaffinity takes it.
type cpuSet [16]uint64 // 1,024 CPUs

func newCPUSet(cpus []int) *cpuSet {
	var s cpuSet
	for _, c := range cpus {
		s[c/64] |= 1 << (c % 64)
	}
	return &s
}

// list is the set's CPUs in order.
func (s *cpuSet) list() []int {
	var l []int
	for i := range len(s) * 64 {
		if s[i/64]&(1<<(i%64)) != 0 {
			l = append(l, i)
		}
	}
	return l
}

// affinity is thread tid's mask (0: the calling thread).
func affinity(tid int) (*cpuSet, error) {
	var s cpuSet
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(tid), unsafe.Sizeof(s), uintptr(unsafe.Pointer(&s))); e != 0 {
		return nil, e
	}
	return &s, nil
}

func setAffinity(tid int, s *cpuSet) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(*s), uintptr(unsafe.Pointer(s))); e != 0 {
		return e
	}
	return nil
}

// startOn starts cmd on cpus (nil: as this process). A child inherits
// the mask of the thread that forks it, and Go's runtime sets GOMAXPROCS
// from the mask at start, so the fork is made from this goroutine's
// thread, locked and given cpus for that time only.
func startOn(cmd *exec.Cmd, cpus *cpuSet) error {
	if cpus == nil {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := affinity(0)
	if err != nil {
		return err
	}
	if err := setAffinity(0, cpus); err != nil {
		return err
	}
	err = cmd.Start()
	if rerr := setAffinity(0, old); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// pinProcess gives every thread of this process the mask cpus; threads
// made later inherit it from the thread that makes them.
func pinProcess(cpus *cpuSet) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := setAffinity(tid, cpus); err != nil && err != syscall.ESRCH {
			return err
		}
	}
	return nil
}

// procCPU is process pid's user and system CPU time (/proc/PID/stat, in
// clock ticks of 10 ms), 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procSwitches is the number of times process pid's threads gave up
// their CPU to wait (voluntary context switches, summed over
// /proc/PID/task/*/status): each is a sleep and a wake-up. 0 when it
// cannot be read; threads that exited are not counted.
func procSwitches(pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(b), "\nvoluntary_ctxt_switches:")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(rest, "\n")
		k, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		n += k
	}
	return n
}

// procRSS is process pid's resident memory in bytes (VmRSS of
// /proc/PID/status), or 0 when it cannot be read.
func procRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), "\nVmRSS:")
	if !ok {
		return 0
	}
	v, _, _ := strings.Cut(rest, "\n")
	kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	return kb << 10
}

//go:build !linux

package worker

import (
	"os"
	"os/exec"
	"syscall"
)

// Without a parent-death signal a child could outlive a killed proxy, and
// without /proc its footprint cannot be measured: process isolation is
// Linux-only, and Load says so.
const supported = false

const selfExe = ""

func sysProcAttr() *syscall.SysProcAttr           { return nil }
func start(*exec.Cmd) error                       { return ErrUnsupported }
func released()                                   {}
func setLimits(int, uint64, uint64, uint64) error { return ErrUnsupported }
func vmSize(int) (uint64, error)                  { return 0, ErrUnsupported }
func procStatus(int, string) (uint64, error)      { return 0, ErrUnsupported }
func waitExited(int)                              {}
func killGroup(int)                               {}
func closeInherited()                             {}

var xcpu os.Signal // none: the child never runs here

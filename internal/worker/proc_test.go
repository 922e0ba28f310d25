package worker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/sandbox"
)

// TestChildProcess reads what the kernel says of a running child: only
// pipes on 0, 1 and 2 and nothing inherited besides (a descriptor this
// process leaks on purpose is closed in the child), its own process group,
// this process as its parent, the parent-death signal, its limits, an
// empty environment but GOMAXPROCS (1), "/" as its directory.
func TestChildProcess(t *testing.T) {
	leakPath := filepath.Join(t.TempDir(), "leaked")
	require.NoError(t, os.WriteFile(leakPath, []byte("x"), 0o600))
	leaked, err := syscall.Open(leakPath, syscall.O_RDONLY, 0) // no O_CLOEXEC: inherited by every exec
	require.NoError(t, err)
	defer syscall.Close(leaked)

	p := startWorker(t, host.Options{Path: fixture(t, "good")})
	c := p.cur
	pid := strconv.Itoa(c.pid)
	proc := func(name string) string { return filepath.Join("/proc", pid, name) }

	entries, err := os.ReadDir(proc("fd"))
	require.NoError(t, err)
	for _, e := range entries {
		fd, _ := strconv.Atoi(e.Name())
		target, err := os.Readlink(proc("fd/" + e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		assert.NotEqual(t, leakPath, target, "fd %d: the leaked descriptor reached the child", fd)
		if fd <= 2 {
			assert.True(t, strings.HasPrefix(target, "pipe:"), "fd %d is %s, want a pipe", fd, target)
			continue
		}
		info, err := os.ReadFile(proc("fdinfo/" + e.Name()))
		if err != nil {
			continue
		}
		flags := fdinfo(t, string(info), "flags")
		assert.NotZero(t, flags&syscall.O_CLOEXEC, "fd %d (%s) is not close-on-exec: not the child's own", fd, target)
	}

	stat := statFields(t, proc("stat"))
	assert.Equal(t, strconv.Itoa(os.Getpid()), stat[1], "parent")
	assert.Equal(t, pid, stat[2], "its own process group")
	assert.NotEqual(t, strconv.Itoa(syscall.Getpgrp()), stat[2])

	status, err := os.ReadFile(proc("status"))
	require.NoError(t, err)
	assert.Contains(t, string(status), "\n", "readable")

	limits, err := os.ReadFile(proc("limits"))
	require.NoError(t, err)
	as := strconv.FormatUint(c.addressSpace, 10)
	assert.Regexp(t, `Max address space\s+`+as+`\s+`+as+`\s+bytes`, string(limits))
	soft := int(DefaultCPUTime.Seconds())
	assert.Regexp(t, fmt.Sprintf(`Max cpu time\s+%d\s+%d\s+seconds`, soft, soft+int(cpuHardMargin.Seconds())), string(limits))
	assert.Greater(t, c.addressSpace, p.addressBudget, "the footprint is measured and added")

	environ, err := os.ReadFile(proc("environ"))
	require.NoError(t, err)
	vars := strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	want := []string{"GOMAXPROCS=1"}
	if hooksEnabled() {
		want = append(want, hookEnv+"=1")
	}
	assert.Equal(t, want, vars)

	cwd, err := os.Readlink(proc("cwd"))
	require.NoError(t, err)
	assert.Equal(t, "/", cwd)
}

// fdinfo reads an octal field of /proc/pid/fdinfo/N.
func fdinfo(t *testing.T, info, field string) int {
	t.Helper()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			require.NoError(t, err)
			return int(n)
		}
	}
	t.Fatalf("no %s in %q", field, info)
	return 0
}

// statFields returns /proc/pid/stat after the command name: state, ppid,
// pgrp, ...
func statFields(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// parentCommand is the hidden mode of this test binary that plays a
// permhost with one process-isolated plugin: it loads args[0] in a child,
// gives it a call that never ends (so that the end of its stdin does not
// end it), prints its pid and waits to be killed.
const parentCommand = "test-worker-parent"

func runTestParent(args []string) int {
	p, err := Load(context.Background(), Options{Plugin: host.Options{Path: args[0], CacheDir: args[1],
		Limits: sandbox.Limits{Timeout: time.Minute}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go p.Call(context.Background(), request("forever", hook("hang")))
	for {
		p.cur.mu.Lock()
		n := len(p.cur.calls)
		p.cur.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println(p.pid())
	select {}
}

// TestParentDeath: when the parent is killed with SIGKILL (no chance to
// close anything), the kernel kills its child, which was busy and would
// not have ended at the end of its stdin.
func TestParentDeath(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, parentCommand, fixture(t, "good"), testCache)
	cmd.Env = append(os.Environ(), hookEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	require.True(t, alive(child))
	assert.Equal(t, strconv.Itoa(cmd.Process.Pid), statFields(t, fmt.Sprintf("/proc/%d/stat", child))[1])

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	eventually(t, "the orphaned child killed", func() bool { return !alive(child) })
}

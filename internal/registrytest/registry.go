package registrytest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

// Binary finds the registry's binary: $PERMHOST_REGISTRY, else
// docker-registry in $PATH or /usr/bin.
func Binary() (string, bool) {
	if p := os.Getenv("PERMHOST_REGISTRY"); p != "" {
		return p, true
	}
	if p, err := exec.LookPath("docker-registry"); err == nil {
		return p, true
	}
	if _, err := os.Stat("/usr/bin/docker-registry"); err == nil {
		return "/usr/bin/docker-registry", true
	}
	return "", false
}

// Registry is a running registry.
type Registry struct {
	// Addr is its host:port on 127.0.0.1, as a reference names it.
	Addr   string
	t      testing.TB
	bin    string
	config string
	cmd    *exec.Cmd
	logs   *acptest.SyncBuffer
	waited <-chan error
}

// Start starts a registry for the rest of the test, or skips the test
// when docker-registry is not installed.
func Start(t testing.TB) *Registry {
	t.Helper()
	bin, ok := Binary()
	if !ok {
		t.Skip("docker-registry is not installed (apt-get install docker-registry; .ci/run installs it)")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "storage"), addr)
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Registry{Addr: addr, t: t, bin: bin, config: path}
	r.Restart()
	t.Cleanup(r.Kill)
	return r
}

// Restart starts the registry again, on the same port and storage, and
// returns once it answers.
func (r *Registry) Restart() {
	r.t.Helper()
	r.logs = &acptest.SyncBuffer{}
	cmd := exec.Command(r.bin, "serve", r.config)
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start %s: %v", r.bin, err)
	}
	r.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			r.cmd = nil
			r.t.Fatalf("%s exited: %v\n%s", r.bin, err, r.logs)
		default:
		}
		if resp, err := client.Get("http://" + r.Addr + "/v2/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.waited = exited
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s does not answer on %s:\n%s", r.bin, r.Addr, r.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the registry at once (an outage); Restart brings it back.
func (r *Registry) Kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	<-r.waited
	r.cmd = nil
}

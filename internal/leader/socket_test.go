package leader

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The socket is 0600 in a directory created 0700.
func TestSocketModes(t *testing.T) {
	base, err := os.MkdirTemp("", "ldr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	path := filepath.Join(base, "new", "leader.sock")
	s := startServer(t, Options{Prompter: newPerson(t), Socket: path})
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode %04o, want %04o", p, got, want)
		}
	}
	if s.Socket() != path {
		t.Errorf("Socket() = %q", s.Socket())
	}
}

func TestListenRefuses(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) string // returns the socket path
		wantErr error
		mention string
	}{
		{
			name: "directory others can enter",
			setup: func(t *testing.T, dir string) string {
				os.Chmod(dir, 0o755)
				return filepath.Join(dir, "leader.sock")
			},
			wantErr: ErrUnsafeDir, mention: "mode 0755",
		},
		{
			name: "directory of another user",
			setup: func(t *testing.T, dir string) string {
				if os.Getuid() != 0 {
					t.Skip("chown needs root")
				}
				os.Chown(dir, 4242, 4242)
				return filepath.Join(dir, "leader.sock")
			},
			wantErr: ErrUnsafeDir, mention: "belongs to uid 4242",
		},
		{
			name: "not a directory",
			setup: func(t *testing.T, dir string) string {
				os.WriteFile(filepath.Join(dir, "f"), nil, 0o600)
				return filepath.Join(dir, "f", "leader.sock")
			},
			mention: "not a directory",
		},
		{
			name: "a file that is not a socket",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "leader.sock")
				os.WriteFile(p, []byte("precious"), 0o600)
				return p
			},
			mention: "not a socket",
		},
		{
			name: "live leader",
			setup: func(t *testing.T, dir string) string {
				s := startServer(t, Options{Prompter: newPerson(t), Socket: filepath.Join(dir, "leader.sock")})
				return s.Socket()
			},
			wantErr: ErrInUse,
		},
		{
			name: "something else listening",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "leader.sock")
				l, err := net.Listen("unix", p)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return p
			},
			wantErr: ErrInUse,
		},
		{
			name: "path too long",
			setup: func(t *testing.T, dir string) string {
				return filepath.Join(dir, strings.Repeat("s", 120))
			},
			mention: "at most 107",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Dir(socketPath(t))
			path := tt.setup(t, dir)
			before, _ := os.ReadFile(path)
			s, err := Listen(context.Background(), Options{Socket: path, Prompter: newPerson(t)})
			if err == nil {
				s.Close()
				t.Fatal("Listen succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Listen = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("Listen = %v, want it to mention %q", err, tt.mention)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatal("Listen changed the file it refused")
			}
		})
	}
}

// A socket nobody listens on (a leader that was killed) is replaced.
func TestStaleSocketReplaced(t *testing.T) {
	path := socketPath(t)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false) // what a killed process leaves behind
	l.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket not left: %v", err)
	}
	p := newPerson(t)
	s := startServer(t, Options{Prompter: p, Socket: path})
	c, _ := NewClient(path)
	res := askAsync(context.Background(), c, question("after restart"))
	p.next()
	p.answer("allow")
	if r := wait(t, res); r.err != nil || r.a.OptionID != "allow" {
		t.Fatalf("%+v, %v", r.a, r.err)
	}
	s.Close()
	// And a new leader may take the place of a closed one.
	s2 := startServer(t, Options{Prompter: p, Socket: path})
	s2.Close()
}

func TestListenOptions(t *testing.T) {
	if _, err := Listen(context.Background(), Options{Socket: socketPath(t)}); err == nil {
		t.Fatal("Listen without a Prompter succeeded")
	}
	if _, err := Listen(context.Background(), Options{Prompter: newPerson(t)}); err == nil {
		t.Fatal("Listen without a socket succeeded")
	}
}

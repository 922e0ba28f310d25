package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/permhost/permhost/internal/fspath"
)

// fileError is an error answer to a file request.
type fileError struct {
	code int
	msg  string
}

// serveFile answers fs/read_text_file or fs/write_text_file, confined to the
// session's cwd. A path is accepted when it lies lexically inside the cwd as
// given or as resolved, and opens inside the resolved cwd (fspath.Resolve:
// symlinks and ".." as the kernel applies them); the file is then opened
// at that resolved path following no symlink (openChecked), so what is
// opened is what was checked, whatever is swapped in meanwhile.
func (c *ClientConn) serveFile(d decoded) {
	var p struct {
		SessionID string  `json:"sessionId"`
		Path      string  `json:"path"`
		Line      *int    `json:"line"`
		Limit     *int    `json:"limit"`
		Content   *string `json:"content"`
	}
	ev := &FileEvent{Method: d.method}
	result, ferr := func() (json.RawMessage, *fileError) {
		if d.strict != nil {
			return nil, &fileError{CodeInvalidParams, "permhost: invalid params: not strict JSON: " + d.strict.Error()}
		}
		if err := json.Unmarshal(d.params, &p); err != nil {
			return nil, &fileError{CodeInvalidParams, "permhost: invalid params: " + err.Error()}
		}
		ev.Path = p.Path
		c.mu.Lock()
		s := c.sessions[p.SessionID]
		c.mu.Unlock()
		if s == nil || s.root == nil {
			return nil, &fileError{CodeInvalidParams, fmt.Sprintf("permhost: unknown session %q", p.SessionID)}
		}
		rel, real, ferr := s.confine(p.Path)
		if ferr != nil {
			return nil, ferr
		}
		if c.opts.FS.Resolved && real != p.Path {
			// The governor decided on real and forwarded it: a path that
			// resolves elsewhere now was changed since.
			return nil, swapped(p.Path, real)
		}
		if d.method == MethodReadTextFile {
			text, ferr := c.readText(p.Path, real, p.Line, p.Limit)
			if ferr != nil {
				return nil, ferr
			}
			ev.Bytes = len(text)
			res, _ := marshalNoEscape(map[string]string{"content": text})
			return res, nil
		}
		if p.Content == nil {
			return nil, &fileError{CodeInvalidParams, "permhost: invalid params: content is missing"}
		}
		if dir := filepath.Dir(rel); dir != "." {
			if err := s.root.MkdirAll(dir, 0o755); err != nil {
				return nil, osFileError(p.Path, err)
			}
		}
		f, err := openChecked(real, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, openError(p.Path, real, err)
		}
		_, err = f.Write([]byte(*p.Content))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, osFileError(p.Path, err)
		}
		ev.Bytes = len(*p.Content)
		return json.RawMessage("{}"), nil
	}()
	if ferr != nil {
		ev.Error = ferr.msg
		c.log.Info("refused a file request", "method", d.method, "path", p.Path, "err", ferr.msg)
	}
	c.events.push(Event{Kind: EventFile, Time: c.now(), SessionID: p.SessionID, File: ev})
	if ferr != nil {
		c.reply(errorLine(d.id, ferr.code, ferr.msg))
	} else {
		c.reply(responseLine(d.id, result))
	}
}

// confine returns the file path opens (resolved as the kernel would:
// symlinks where met, ".." after them, a missing tail appended), absolute
// and relative to the session's resolved cwd, or why it is refused: a
// symlink inside the cwd pointing inside is fine, one pointing outside is
// refused, and so is a "k/.." whose k leads outside.
func (s *clientSession) confine(path string) (rel, real string, ferr *fileError) {
	if !filepath.IsAbs(path) {
		return "", "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: path %q is not absolute", path)}
	}
	if clean := filepath.Clean(path); !inside(s.cwd, clean) && !inside(s.resolved, clean) {
		return "", "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s is outside the session directory %s", path, s.cwd)}
	}
	real, err := fspath.Resolve(path)
	if err != nil {
		return "", "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s cannot be resolved: %v", path, err)}
	}
	if !inside(s.resolved, real) {
		return "", "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s resolves to %s, outside the session directory %s", path, real, s.cwd)}
	}
	rel, _ = filepath.Rel(s.resolved, real)
	if rel == "." {
		return "", "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s is the session directory, not a file", path)}
	}
	return rel, real, nil
}

// openError is the answer to a failed openChecked: a symlink met where
// the checked path had none is a swap.
func openError(path, real string, err error) *fileError {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return swapped(path, real)
	}
	return osFileError(path, err)
}

func inside(base, path string) bool {
	rel, err := filepath.Rel(base, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func osFileError(path string, err error) *fileError {
	if errors.Is(err, fs.ErrNotExist) {
		return &fileError{CodeResourceNotFound, fmt.Sprintf("permhost: %s: no such file", path)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fileError{CodeInternalError, fmt.Sprintf("permhost: %s: %v", path, err)}
}

// readText reads the file path resolves to (real), or limit lines of it
// from the 1-based line.
func (c *ClientConn) readText(path, real string, line, limit *int) (string, *fileError) {
	f, err := openChecked(real, os.O_RDONLY, 0)
	if err != nil {
		return "", openError(path, real, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s is a directory", path)}
	}
	data, err := io.ReadAll(io.LimitReader(f, c.opts.MaxReadBytes+1))
	if err != nil {
		return "", osFileError(path, err)
	}
	if int64(len(data)) > c.opts.MaxReadBytes {
		return "", &fileError{CodeInternalError, fmt.Sprintf("permhost: %s is larger than %d bytes", path, c.opts.MaxReadBytes)}
	}
	if (line != nil && *line < 1) || (limit != nil && *limit < 0) {
		return "", &fileError{CodeInvalidParams, "permhost: invalid params: line is 1-based and limit must not be negative"}
	}
	if line == nil && limit == nil {
		return string(data), nil
	}
	start := 1
	if line != nil {
		start = *line
	}
	var out bytes.Buffer
	n := 0
	for i, rest := 1, data; len(rest) > 0; i++ {
		end := bytes.IndexByte(rest, '\n') + 1
		if end == 0 {
			end = len(rest)
		}
		if i >= start {
			if limit != nil && n >= *limit {
				break
			}
			out.Write(rest[:end])
			n++
		}
		rest = rest[end:]
	}
	return out.String(), nil
}

package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
)

// fileError is an error answer to a file request.
type fileError struct {
	code int
	msg  string
}

// serveFile answers fs/read_text_file or fs/write_text_file, confined to the
// session's cwd. A path is accepted when it lies lexically inside the cwd as
// given or as resolved; the file is then opened through an os.Root on the
// resolved cwd, which refuses any symlink leading outside, race-free.
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
		rel, ferr := s.confine(p.Path)
		if ferr != nil {
			return nil, ferr
		}
		if d.method == MethodReadTextFile {
			text, ferr := c.readText(s, rel, p.Line, p.Limit)
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
		if err := s.root.WriteFile(rel, []byte(*p.Content), 0o644); err != nil {
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

// confine returns path relative to the session's resolved cwd, or why it is
// refused. The path is resolved as far as it exists (symlinks followed, the
// rest appended), so a symlink inside the cwd pointing inside is fine and
// one pointing outside is refused; the os.Root the file is then opened
// through refuses anything that changed meanwhile.
func (s *clientSession) confine(path string) (string, *fileError) {
	if !filepath.IsAbs(path) {
		return "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: path %q is not absolute", path)}
	}
	path = filepath.Clean(path)
	if !inside(s.cwd, path) && !inside(s.resolved, path) {
		return "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s is outside the session directory %s", path, s.cwd)}
	}
	real, err := resolveExisting(path)
	if err != nil {
		return "", osFileError(path, err)
	}
	if !inside(s.resolved, real) {
		return "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s resolves to %s, outside the session directory %s", path, real, s.cwd)}
	}
	rel, _ := filepath.Rel(s.resolved, real)
	if rel == "." {
		return "", &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s is the session directory, not a file", path)}
	}
	return rel, nil
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// path and appends the rest.
func resolveExisting(path string) (string, error) {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
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

// readText reads the file, or limit lines of it from the 1-based line.
func (c *ClientConn) readText(s *clientSession, rel string, line, limit *int) (string, *fileError) {
	path := filepath.Join(s.cwd, rel)
	f, err := s.root.Open(rel)
	if err != nil {
		return "", osFileError(path, err)
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

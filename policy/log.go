package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/auditlog"
	"github.com/permhost/permhost/internal/config"
)

// Who decided, in LogEntry.DecidedBy besides a plugin's name.
const (
	ByBuiltin = "builtin"
	ByPerson  = "person"
	ByCancel  = "cancel"
	// ByModes is [session] modes = "govern": a mode action of permhost's.
	ByModes = "modes"
	// ByAgent is the agent itself: a tool call it ran without asking.
	ByAgent = "agent"
	// ByAllowedCall starts the decidedBy of a file request the session's
	// permission request for the same call already allowed:
	// "allowed:DECISION-ID".
	ByAllowedCall = "allowed:"
)

// LogEntry is one line of the decision log.
type LogEntry struct {
	DecisionID string    `json:"decisionId"`
	Time       time.Time `json:"time"`
	Via        string    `json:"via"` // proxy, run, replay, leader
	Strategy   string    `json:"strategy,omitempty"`
	Session    string    `json:"session"`
	Agent      *abi.Peer `json:"agent,omitempty"`
	// Cwd is the session's project: the working directory its
	// session/new (load, resume) named, when absolute; the history's
	// project filter reads it.
	Cwd        string      `json:"cwd,omitempty"`
	ToolCall   LogToolCall `json:"toolCall"`
	Options    []LogOption `json:"options"`
	Plugins    []LogPlugin `json:"plugins"`
	Outcome    string      `json:"outcome"` // selected or cancelled: what the agent got
	OptionID   string      `json:"optionId,omitempty"`
	OptionKind string      `json:"optionKind,omitempty"`
	DecidedBy  string      `json:"decidedBy"`
	Reason     string      `json:"reason,omitempty"`
	Fallback   string      `json:"fallback,omitempty"`
	Person     *LogPerson  `json:"person,omitempty"`
	// Grant is the grant of permhost's the person's answer recorded.
	Grant *LogGrant `json:"grant,omitempty"`
	// Request is the agent's request when it is not a permission request:
	// fs/read_text_file, fs/write_text_file, terminal/create or
	// elicitation/create. Outcome is then "forwarded" (to the editor) or
	// "refused" for a file or terminal request, the action answered
	// (accept, decline, cancel) for an elicitation.
	Request string `json:"request,omitempty"`
	// Mode is a mode action of [session] modes = "govern"; such an entry's
	// outcome says how it went and decidedBy is "modes".
	Mode *LogMode `json:"mode,omitempty"`
	// Unasked marks a tool call the agent ran with no permission request
	// (outcome "ran", decidedBy "agent").
	Unasked bool `json:"unasked,omitempty"`
	// Steer is what [session] reasons did after a reject (reasons.go).
	Steer     *LogSteer `json:"steer,omitempty"`
	LatencyUs int64     `json:"latencyUs"`
}

// Mode actions, in LogMode.Action.
const (
	// ModeSwitch: a session started in a mode that decides by itself was
	// moved to the profile's asking mode before the editor saw it.
	ModeSwitch = "switch"
	// ModeUngovernable: such a session could not be moved (no asking
	// mode, no way to switch, or the agent refused): the editor got an
	// error instead of the session.
	ModeUngovernable = "ungovernable"
	// ModeRefuse: the editor's switch into a deciding mode was refused.
	ModeRefuse = "refuse"
	// ModeReverse: the agent switched into a deciding mode by itself;
	// permhost switched it back.
	ModeReverse = "reverse"
	// ModeRemoveOptions: options of a permission request that would switch
	// into a deciding mode were removed.
	ModeRemoveOptions = "remove-options"
)

// LogMode is one mode action.
type LogMode struct {
	Action string `json:"action"`
	// Trigger is the message that caused it: session/new, session/load,
	// session/resume, session/set_mode, session/set_config_option,
	// current_mode_update, config_option_update, session/request_permission.
	Trigger string `json:"trigger"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	// By is how permhost switched: session/set_mode or
	// session/set_config_option.
	By string `json:"by,omitempty"`
	// Options are the option ids removed.
	Options []string `json:"options,omitempty"`
	// Error is the agent's answer when it refused permhost's switch.
	Error string `json:"error,omitempty"`
	// Refusal is the error message the editor is refused with (a refused
	// switch, a session permhost does not govern), read back from the
	// bytes it gets.
	Refusal string `json:"refusal,omitempty"`
}

// LogToolCall identifies the call without copying its input.
type LogToolCall struct {
	ID             string `json:"id"`
	Title          string `json:"title,omitempty"`
	Kind           string `json:"kind,omitempty"`
	Status         string `json:"status,omitempty"` // an unasked call's: in_progress, completed, failed
	RawInputSHA256 string `json:"rawInputSha256,omitempty"`
}

// LogOption is an offered option.
type LogOption struct {
	OptionID string `json:"optionId"`
	Kind     string `json:"kind"`
	Durable  bool   `json:"durable"`
}

// LogPlugin is one plugin's part.
type LogPlugin struct {
	Name       string      `json:"name"`
	Version    string      `json:"version,omitempty"`
	SHA256     string      `json:"sha256,omitempty"`
	Layer      string      `json:"layer"`
	Policy     string      `json:"failurePolicy"`
	Outcome    string      `json:"outcome,omitempty"`
	Scope      string      `json:"scope,omitempty"`
	OptionID   string      `json:"optionId,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Enforced   bool        `json:"enforced"`
	Skipped    string      `json:"skipped,omitempty"`
	Failure    *LogFailure `json:"failure,omitempty"`
	DurationUs int64       `json:"durationUs"`
	Logs       []host.Log  `json:"logs,omitempty"`
}

// LogFailure is a plugin failure.
type LogFailure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// LogPerson is what the person was shown and answered.
type LogPerson struct {
	Shown []string `json:"shown"` // option ids offered to the person
	// Answer is the option id the person chose, "cancelled", or "timeout".
	Answer string `json:"answer"`
	// Refused is set when the answer named an option that was not shown:
	// it did not reach the agent.
	Refused bool `json:"refused,omitempty"`
	// Who names a remote approver (a leader) when not the local person.
	Who string `json:"who,omitempty"`
}

// CanonicalSHA256 hashes a JSON value after canonicalising it (keys sorted,
// numbers kept as written, no insignificant space), so that the same input
// hashes the same whatever the agent's key order. Invalid JSON hashes as
// its bytes.
func CanonicalSHA256(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	b := []byte(raw)
	if err := dec.Decode(&v); err == nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			b = bytes.TrimRight(buf.Bytes(), "\n")
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// recordVerdict records who decided the chain's verdict v and why: the
// plugins' votes, the deciding member, its reason and any fallback.
func (e *LogEntry) recordVerdict(v host.Verdict) {
	e.Plugins = LogPlugins(v.Votes)
	e.DecidedBy, e.Reason, e.Fallback = v.DecidedBy, v.Reason, v.Fallback
}

// LogPlugins turns a chain's votes into log records, for every writer of
// decision log entries (the proxy, run, and the leader's own log).
func LogPlugins(votes []host.Vote) []LogPlugin {
	out := make([]LogPlugin, 0, len(votes))
	for _, v := range votes {
		p := LogPlugin{
			Name: v.Plugin, Version: v.Version, SHA256: v.SHA256, Layer: v.Layer, Policy: string(v.Policy),
			Enforced: v.Enforced, Skipped: v.Skipped, DurationUs: v.Duration.Microseconds(), Logs: v.Logs,
		}
		if v.Err != nil {
			kind := string(host.KindOf(v.Err))
			if kind == "" {
				kind = "quarantined"
			}
			p.Failure = &LogFailure{Kind: kind, Message: v.Err.Error()}
		} else if v.Skipped == "" {
			p.Outcome, p.Scope, p.OptionID, p.Reason = string(v.Decision.Outcome), string(v.Decision.Scope), v.Decision.OptionID, v.Decision.Reason
		}
		out = append(out, p)
	}
	return out
}

// entryFor starts a log entry for a request.
func entryFor(req abi.Request, via, strategy string, start time.Time) LogEntry {
	e := LogEntry{
		DecisionID: req.DecisionID, Time: start.UTC(), Via: via, Strategy: strategy,
		Session: req.Session.ID, Agent: req.Session.Agent, Cwd: LogCwd(req.Session.Cwd),
		ToolCall: LogToolCall{ID: req.ToolCall.ID, Title: req.ToolCall.Title, Kind: req.ToolCall.Kind,
			RawInputSHA256: CanonicalSHA256(req.ToolCall.RawInput)},
		Options: make([]LogOption, 0, len(req.Options)),
		Plugins: []LogPlugin{},
	}
	for _, o := range req.Options {
		e.Options = append(e.Options, LogOption{OptionID: o.OptionID, Kind: o.Kind, Durable: o.Durable})
	}
	return e
}

// LogCwd is a session's working directory as LogEntry.Cwd records it:
// cleaned when absolute, else nothing (the peer's word for a project it
// did not name properly is not a project).
func LogCwd(cwd string) string {
	if !filepath.IsAbs(cwd) {
		return ""
	}
	return filepath.Clean(cwd)
}

// writeLog writes entry to the decision log and gives it to
// Options.Observe.
func (e *Engine) writeLog(entry LogEntry) {
	e.dlog.Write(entry)
	if e.observe != nil {
		e.observe(entry)
	}
}

// sealDelay is how long after an entry a signed log seals it (with every
// entry written meanwhile): the longest an entry stays unsigned.
const sealDelay = 100 * time.Millisecond

// DecisionLog appends entries to a JSON-lines file from its own goroutine,
// so that writing never holds up a decision or the proxy's forwarding. When
// the queue is full an entry is dropped and counted, never waited for.
type DecisionLog struct {
	w       io.WriteCloser
	file    *auditlog.Writer // instead of w: a signed or rotated log
	queue   chan LogEntry
	done    chan struct{}
	log     *slog.Logger
	dropped atomic.Int64
	once    sync.Once
	mu      sync.RWMutex // Write holds it to read closed and send; Close to set it
	closed  bool
}

// OpenDecisionLog opens (creating, 0600) the log at path for appending. An
// empty path gives a log that discards.
func OpenDecisionLog(path string, logger *slog.Logger) (*DecisionLog, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" {
		return &DecisionLog{log: logger}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("policy: decision log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("policy: decision log: %w", err)
	}
	return NewDecisionLog(f, logger), nil
}

// OpenConfiguredLog opens the decision log cfg's [log] table describes:
// at path, chained and sealed with key (docs/audit-log.md), rotated at
// max_size.
func OpenConfiguredLog(cfg *config.Config, logger *slog.Logger) (*DecisionLog, error) {
	if cfg.LogPath == "" || (cfg.LogKey == nil && cfg.LogMaxSize == 0) {
		return OpenDecisionLog(cfg.LogPath, logger)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o700); err != nil {
		return nil, fmt.Errorf("policy: decision log: %w", err)
	}
	w, err := auditlog.Open(cfg.LogPath, cfg.LogKey, cfg.LogMaxSize)
	if err != nil {
		return nil, fmt.Errorf("policy: decision log: %w", err)
	}
	if w.Recovered > 0 {
		logger.Warn("decision log: removed the incomplete last line a crash left", "path", cfg.LogPath, "bytes", w.Recovered)
	}
	return newDecisionLog(nil, w, logger), nil
}

// NewDecisionLog writes entries to w, which it closes on Close.
func NewDecisionLog(w io.WriteCloser, logger *slog.Logger) *DecisionLog {
	return newDecisionLog(w, nil, logger)
}

func newDecisionLog(w io.WriteCloser, file *auditlog.Writer, logger *slog.Logger) *DecisionLog {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &DecisionLog{w: w, file: file, queue: make(chan LogEntry, 4096), done: make(chan struct{}), log: logger}
	go l.run()
	return l
}

func (l *DecisionLog) run() {
	defer close(l.done)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var sealTimer *time.Timer
	var sealDue <-chan time.Time // nil when nothing waits for a seal
	defer func() {
		if sealTimer != nil {
			sealTimer.Stop()
		}
	}()
	for {
		var e LogEntry
		select {
		case <-sealDue:
			sealDue = nil
			if err := l.file.Seal(); err != nil {
				l.log.Error("decision log: seal", "err", err)
			}
			continue
		case q, ok := <-l.queue:
			if !ok {
				return // Close seals what is left
			}
			e = q
		}
		buf.Reset()
		if err := enc.Encode(e); err != nil {
			l.log.Error("decision log: encode", "err", err)
			continue
		}
		if l.file == nil {
			if _, err := l.w.Write(buf.Bytes()); err != nil {
				l.log.Error("decision log: write", "err", err)
			}
			continue
		}
		// One goroutine appends, so the chain is in the order the
		// entries were queued. A seal follows within sealDelay: one
		// signature for every entry written meanwhile, so that a busy
		// proxy signs a few times a second, not once per decision.
		if err := l.file.Append(buf.Bytes()); err != nil {
			l.log.Error("decision log: write", "err", err)
		}
		if sealDue == nil {
			if sealTimer == nil {
				sealTimer = time.NewTimer(sealDelay)
			} else {
				sealTimer.Reset(sealDelay)
			}
			sealDue = sealTimer.C
		}
	}
}

// Write queues e. After Close it drops e (and says so).
func (l *DecisionLog) Write(e LogEntry) {
	if l == nil || l.queue == nil {
		return
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.log.Warn("decision log closed: entry dropped", "decisionId", e.DecisionID)
		return
	}
	select {
	case l.queue <- e:
	default:
		n := l.dropped.Add(1)
		l.log.Warn("decision log queue full: entry dropped", "decisionId", e.DecisionID, "dropped", n)
	}
}

// Close writes what is queued and closes the file. It is idempotent; an
// entry written after it is dropped.
func (l *DecisionLog) Close() error {
	if l == nil || l.queue == nil {
		return nil
	}
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.queue)
		<-l.done
		if l.file != nil {
			err = l.file.Close()
		} else {
			err = l.w.Close()
		}
	})
	return err
}

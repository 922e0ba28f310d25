package acp

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// EventKind names what an Event reports.
type EventKind string

// Kinds of Event.
const (
	// EventText is a chunk of the agent's message (Text).
	EventText EventKind = "text"
	// EventThought is a chunk of the agent's reasoning (Text).
	EventThought EventKind = "thought"
	// EventToolCall is a new tool call; EventToolCallUpdate a change to one
	// (ToolCall holds the merged state either way).
	EventToolCall       EventKind = "tool_call"
	EventToolCallUpdate EventKind = "tool_call_update"
	// EventPermission is an answered permission request (Permission).
	EventPermission EventKind = "permission"
	// EventFile is a file the client read or wrote for the agent (File).
	EventFile EventKind = "fs"
	// EventMode is a change of the session's mode (Mode).
	EventMode EventKind = "mode"
	// EventUpdate is any other session/update (Update, verbatim).
	EventUpdate EventKind = "update"
	// EventStop is the end of a prompt turn (StopReason).
	EventStop EventKind = "stop"
)

// Event is one thing that happened in a session, in the order the client
// saw it. It encodes as one JSON object, the line format of
// `permhost run --json`.
type Event struct {
	Kind      EventKind `json:"event"`
	Time      time.Time `json:"time"`
	SessionID string    `json:"sessionId,omitempty"`
	// Text is the text of a text or thought chunk.
	Text       string           `json:"text,omitempty"`
	ToolCall   *ToolCallEvent   `json:"toolCall,omitempty"`
	Permission *PermissionEvent `json:"permission,omitempty"`
	File       *FileEvent       `json:"fs,omitempty"`
	Mode       string           `json:"mode,omitempty"`
	StopReason string           `json:"stopReason,omitempty"`
	// Update is the session/update's update object verbatim, for kinds
	// that have no field of their own (and chunks that are not text).
	Update json.RawMessage `json:"update,omitempty"`
}

// ToolCallEvent is a tool call's merged state after an update.
type ToolCallEvent struct {
	ID     string `json:"toolCallId"`
	Title  string `json:"title,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status,omitempty"`
	// RunBy is "agent": the client serves no terminal, so every tool call
	// is carried out by the agent itself.
	RunBy string `json:"runBy"`
	// State is every field the agent sent for the call, merged (later
	// values win; lists replaced), as a JSON object.
	State json.RawMessage `json:"state"`
}

// PermissionEvent reports how a permission request was answered.
type PermissionEvent struct {
	// RequestID is the agent's request id, verbatim.
	RequestID  json.RawMessage    `json:"requestId"`
	ToolCallID string             `json:"toolCallId,omitempty"`
	Title      string             `json:"title,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Options    []PermissionOption `json:"options"`
	// Outcome is what the agent was told: "selected" or "cancelled".
	Outcome    string `json:"outcome"`
	OptionID   string `json:"optionId,omitempty"`
	OptionName string `json:"optionName,omitempty"`
	OptionKind string `json:"optionKind,omitempty"`
	DecidedBy  string `json:"decidedBy,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DecisionID string `json:"decisionId,omitempty"`
	// InTurn is false for a request that arrived while no prompt of its
	// session was in flight.
	InTurn     bool          `json:"inTurn"`
	Duration   time.Duration `json:"-"`
	DurationMs float64       `json:"durationMs"`
	// Request is the handler's view of the request (session state and
	// merged tool call included).
	Request *PermissionRequest `json:"-"`
}

// FileEvent reports a file request the client served (or refused).
type FileEvent struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Bytes  int    `json:"bytes"`
	// Error is the error the agent was sent; empty on success.
	Error string `json:"error,omitempty"`
}

func toolCallEvent(merged json.RawMessage) *ToolCallEvent {
	var f struct {
		ID     string `json:"toolCallId"`
		Title  string `json:"title"`
		Kind   string `json:"kind"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(merged, &f)
	return &ToolCallEvent{ID: f.ID, Title: f.Title, Kind: f.Kind, Status: f.Status, RunBy: "agent", State: merged}
}

func permissionEvent(p *clientPerm, dec PermissionDecision, took time.Duration) *PermissionEvent {
	ev := &PermissionEvent{
		RequestID: p.req.ID, ToolCallID: p.req.ToolCallID, Options: p.req.Options,
		Outcome: "cancelled", DecidedBy: dec.DecidedBy, Reason: dec.Reason, DecisionID: dec.DecisionID,
		InTurn: p.inTurn, Duration: took, DurationMs: float64(took.Microseconds()) / 1000, Request: p.req,
	}
	if ev.Options == nil {
		ev.Options = []PermissionOption{}
	}
	var tc struct {
		Title string `json:"title"`
		Kind  string `json:"kind"`
	}
	_ = json.Unmarshal(p.req.ToolCall, &tc)
	ev.Title, ev.Kind = tc.Title, tc.Kind
	if dec.OptionID != "" {
		ev.Outcome, ev.OptionID = "selected", dec.OptionID
		for _, o := range p.req.Options {
			if o.OptionID == dec.OptionID {
				ev.OptionName, ev.OptionKind = o.Name, o.Kind
				break
			}
		}
	}
	return ev
}

// eventQueue delivers events to fn in order from its own goroutine, so that
// the read loop never waits for fn. It is unbounded: dropping part of a
// transcript would be worse than holding it in memory.
type eventQueue struct {
	fn   func(Event)
	log  *slog.Logger
	mu   sync.Mutex
	cond *sync.Cond
	q    []queued
	shut bool
	done chan struct{}
}

type queued struct {
	ev      *Event
	barrier chan struct{}
}

func newEventQueue(fn func(Event), log *slog.Logger) *eventQueue {
	e := &eventQueue{fn: fn, log: log, done: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	go e.run()
	return e
}

func (e *eventQueue) run() {
	defer close(e.done)
	for {
		e.mu.Lock()
		for len(e.q) == 0 && !e.shut {
			e.cond.Wait()
		}
		if len(e.q) == 0 {
			e.mu.Unlock()
			return
		}
		item := e.q[0]
		e.q[0] = queued{}
		e.q = e.q[1:]
		e.mu.Unlock()
		if item.ev != nil && e.fn != nil {
			e.deliver(*item.ev)
		}
		if item.barrier != nil {
			close(item.barrier)
		}
	}
}

func (e *eventQueue) deliver(ev Event) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("the event handler panicked", "event", ev.Kind, "panic", r)
		}
	}()
	e.fn(ev)
}

func (e *eventQueue) push(ev Event) { e.add(queued{ev: &ev}) }

// barrier waits until everything queued before it has been delivered.
func (e *eventQueue) barrier() {
	ch := make(chan struct{})
	if !e.add(queued{barrier: ch}) {
		return
	}
	<-ch
}

func (e *eventQueue) add(item queued) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		return false
	}
	e.q = append(e.q, item)
	e.cond.Signal()
	return true
}

// close delivers what is queued and stops.
func (e *eventQueue) close() {
	e.mu.Lock()
	e.shut = true
	e.cond.Signal()
	e.mu.Unlock()
	<-e.done
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/policy"
)

func init() {
	commands["run"] = command{summary: "drive one agent session headless (CI, scripts), deciding permissions by policy", run: runRun}
}

// Exit statuses of permhost run, besides exitOK (end_turn) and exitUsage.
const (
	exitRunAgent     = 3 // the agent failed: crashed, answered an error, spoke another protocol
	exitRunCancelled = 4 // the turn ended cancelled (Ctrl-C, SIGTERM)
	exitRunRefusal   = 5 // the agent refused
	exitRunLimit     = 6 // max_tokens or max_turn_requests
)

// Timing of permhost run's shutdown.
const (
	// runCancelWait bounds the wait for the agent's stop reason after a
	// cancellation; then the agent is stopped.
	runCancelWait = 10 * time.Second
	// runStopGrace is how long the agent gets to exit once its input is
	// closed, before SIGTERM (and as long again before SIGKILL).
	runStopGrace = 2 * time.Second
	// runDrainWait bounds reading the rest of the agent's output once it
	// has exited.
	runDrainWait = time.Second
	// maxPromptFile bounds --prompt-file.
	maxPromptFile = 16 << 20
)

const runHelp = `usage: permhost run [FLAGS] (--prompt TEXT | --prompt-file F) -- AGENT [ARGS...]

Starts AGENT, an ACP agent, and drives one session without an editor:
initialize, session/new in --cwd, one prompt, to the end of the turn.
Agent text goes to stdout; tool calls, their status and each permission
decision (what, who decided, why, in how long) go to stderr. With --json,
stdout instead carries one JSON event per line (text, thought, tool_call,
tool_call_update, permission, fs, mode, unasked, update, stop).

Permission requests run through the configured plugins; a request they
leave undecided follows --on-undecided: reject (the offered reject option),
cancel (the ACP cancelled outcome), or prompt (ask at the terminal when
stdin is one; otherwise reject). Every decision goes to the decision log.

The session is governed as permhost proxy's are ([session] modes and fs,
"govern" by default when plugins are configured): a session that starts
in a mode where the agent decides by itself is moved to its asking mode
before the prompt is sent (a "mode" event; one that cannot be moved is not
prompted: exit 7); the agent's own switch into such a mode is reversed;
options that would switch into one are removed; with --allow-fs the
agent's file requests go through the plugins first (a refusal is an "fs"
event and the agent gets the policy's error); a tool call the agent runs
with no permission request is logged, warned about once and shown (an
"unasked" event).

Ctrl-C cancels the turn (session/cancel; pending requests answered
cancelled) and waits for the agent's stop reason; a second Ctrl-C stops the
agent at once.

exit status:
  0  the turn ended (end_turn)
  2  usage or configuration error
  3  agent failure (exited, crashed, error response, protocol mismatch)
  4  the turn was cancelled
  5  the agent refused (refusal)
  6  a limit ended the turn (max_tokens, max_turn_requests)
  7  the session cannot be governed ([session] modes): the prompt was not sent

flags:`

func runRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if _, ok := stderr.(*os.File); !ok {
		// The agent's stderr is copied into it while permhost writes too.
		stderr = &syncWriter{w: stderr}
	}
	fs := newFlagSet("run", stderr)
	configFlag := fs.String("config", "", configUsage)
	cwdFlag := fs.String("cwd", "", "the session's working directory (default: the current directory)")
	jsonOut := fs.Bool("json", false, "print one JSON event per line on stdout instead of the transcript")
	onUndecided := fs.String("on-undecided", "", "what happens to requests the plugins leave undecided: reject, cancel or prompt (default: the configuration's headless.on_undecided, else reject)")
	permTimeout := fs.Duration("permission-timeout", 30*time.Second, "bound on each permission decision, the person's answer included; then the builtin fallback answers (0: no bound)")
	allowFS := fs.Bool("allow-fs", false, "serve the agent's fs/read_text_file and fs/write_text_file, confined to --cwd (through the plugins first when [session] fs governs)")
	promptText := fs.String("prompt", "", "the prompt to send")
	promptFile := fs.String("prompt-file", "", "read the prompt from this file ('-' for stdin)")
	logLevel := fs.String("log-level", "warn", "diagnostics level: debug, info, warn or error")
	promptGrace := fs.Duration("prompt-grace", prompt.DefaultGrace, "with --on-undecided prompt: keys pressed within this long after a question appears are ignored, so that a keystroke meant for something else is not taken as the answer (0: none)")
	leaderSocket := fs.String("leader", "", "Unix socket of a `permhost leader`: undecided requests go there first (bounded by --permission-timeout); if it cannot answer, --on-undecided applies")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), runHelp)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "permhost run: "+format+"\n", a...)
		return exitUsage
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return fail("no agent command given (permhost run [FLAGS] --prompt TEXT -- AGENT [ARGS...])")
	}
	if (*promptText == "") == (*promptFile == "") {
		return fail("give exactly one of --prompt and --prompt-file")
	}
	if *permTimeout < 0 {
		return fail("--permission-timeout must not be negative")
	}
	if *promptGrace < 0 {
		return fail("--prompt-grace must not be negative")
	}
	switch *onUndecided {
	case "", config.UndecidedReject, config.UndecidedCancel, config.UndecidedPrompt:
	default:
		return fail("--on-undecided %q: want reject, cancel or prompt", *onUndecided)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "permhost-run")

	text := *promptText
	if *promptFile != "" {
		var err error
		if text, err = readPromptFile(*promptFile, stdin); err != nil {
			return fail("%v", err)
		}
	}
	cwd, err := sessionDir(*cwdFlag)
	if err != nil {
		return fail("%v", err)
	}
	cfg, err := loadConfig(ctx, *configFlag)
	if err != nil {
		printError(stderr, "permhost run", err)
		return exitUsage
	}
	out := newRunPrinter(stdout, stderr, *jsonOut)
	defer out.close()
	engine, err := policy.New(ctx, policy.Options{Config: cfg, Via: "run", Logger: logger, Observe: out.observe, Notice: os.Stderr})
	if err != nil {
		return fail("%v", err)
	}
	defer engine.Close(context.WithoutCancel(ctx))
	if err := engine.CheckConfig(ctx); err != nil {
		printError(stderr, "permhost run", err)
		return exitUsage
	}

	mode := *onUndecided
	if mode == "" {
		mode = engine.Config().OnUndecided
	}
	var ask policy.AskFunc
	var askReason func(context.Context, prompt.Question) (prompt.Answer, error)
	if mode == config.UndecidedPrompt || engine.Config().OnQuestion == config.UndecidedPrompt {
		if f, ok := stdin.(*os.File); ok && prompt.IsTerminal(f) {
			grace := *promptGrace
			if grace == 0 {
				grace = -1 // prompt.Options: negative is none, 0 the default
			}
			term, err := prompt.Open(f, stderr, prompt.Options{Grace: grace})
			if err != nil {
				return fail("%v", err)
			}
			ask, askReason = term.Ask, term.AskReason
		} else {
			if mode == config.UndecidedPrompt {
				fmt.Fprintln(stderr, "permhost run: stdin is not a terminal: --on-undecided prompt behaves as reject")
			} else {
				fmt.Fprintln(stderr, "permhost run: stdin is not a terminal: [headless] on_question prompt behaves as cancel")
			}
		}
	}
	leaderAsk, err := leaderFunc(*leaderSocket, cwd, *permTimeout) // leader_worker.go
	if err != nil {
		return fail("%v", err)
	}
	handler, err := engine.Headless(policy.HeadlessOptions{OnUndecided: mode, Timeout: *permTimeout, Ask: ask, AskReason: askReason, Leader: leaderAsk})
	if err != nil {
		return fail("%v", err)
	}
	var gov acp.Governor
	s := engine.Config().Session
	if s.Modes == config.ModesGovern || s.FS == config.FSGovern {
		gov = engine.Governor() // run_govern.go
	}
	return drive(ctx, runSetup{argv: argv, cwd: cwd, text: text, json: *jsonOut, allowFS: *allowFS, fsGoverned: s.FS == config.FSGovern,
		handler: handler, governor: gov, out: out, logger: logger, stdout: stdout, stderr: stderr})
}

func readPromptFile(name string, stdin io.Reader) (string, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPromptFile+1))
	if err != nil {
		return "", fmt.Errorf("--prompt-file: %w", err)
	}
	if len(b) > maxPromptFile {
		return "", fmt.Errorf("--prompt-file %s: larger than %d bytes", name, maxPromptFile)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return "", fmt.Errorf("--prompt-file %s is empty", name)
	}
	return string(b), nil
}

// sessionDir returns the absolute session directory for --cwd.
func sessionDir(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--cwd: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--cwd: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("--cwd %s is not a directory", abs)
	}
	return abs, nil
}

type runSetup struct {
	argv          []string
	cwd, text     string
	json, allowFS bool
	// fsGoverned: the governor decides each file request and forwards
	// the path it decided on, resolved (acp.FSAccess.Resolved).
	fsGoverned bool
	handler    acp.PermissionHandler
	// governor, when set, governs the session from a proxy between the
	// client and the agent (run_govern.go).
	governor acp.Governor
	// out shows the session; nil means a printer of drive's own.
	out            *runPrinter
	logger         *slog.Logger
	stdout, stderr io.Writer
}

// drive runs the agent through one turn and returns the exit status.
func drive(ctx context.Context, s runSetup) int {
	// A write to a closed stdout must fail with EPIPE instead of killing
	// permhost before it has stopped the agent.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	agent, err := acp.StartAgent(acp.AgentConfig{Argv: s.argv, Stderr: s.stderr, Dir: s.cwd, Logger: s.logger})
	if err != nil {
		fmt.Fprintln(s.stderr, "permhost run:", err)
		return exitRunAgent
	}
	defer agent.Close()
	out := s.out
	if out == nil {
		out = newRunPrinter(s.stdout, s.stderr, s.json)
		defer out.close()
	}
	var toAgent io.Writer = agent.Stdin()
	var fromAgent io.Reader = agent.Stdout()
	var link *governedLink
	if s.governor != nil {
		if link, err = linkGoverned(agent, s.governor, s.logger); err != nil {
			fmt.Fprintln(s.stderr, "permhost run:", err)
			return exitRunAgent
		}
		defer link.close()
		toAgent, fromAgent = link.toProxy, link.fromProxy
	}
	conn, err := acp.NewClientConn(toAgent, fromAgent, acp.ClientOptions{
		Info:        acp.Peer{Name: "permhost", Title: "permhost run", Version: permhostVersion()},
		Permissions: s.handler,
		Events:      out.event,
		FS:          acp.FSAccess{Read: s.allowFS, Write: s.allowFS, Resolved: s.fsGoverned && s.governor != nil},
		Logger:      s.logger,
	})
	if err != nil {
		fmt.Fprintln(s.stderr, "permhost run:", err)
		return exitRunAgent
	}

	// The first Ctrl-C (or SIGTERM, or ctx) cancels the turn; the second
	// signal stops the agent at once.
	turnCtx, cancelTurn := context.WithCancel(context.Background())
	defer cancelTurn()
	stopWatch := context.AfterFunc(ctx, cancelTurn)
	defer stopWatch()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		// main's context ends on the same first Ctrl-C that sigs receives,
		// in either order: signals alone are counted.
		n := 0
		turnDone := turnCtx.Done()
		var giveUp <-chan time.Time
		for {
			select {
			case <-sigs:
				n++
				if n == 1 {
					out.note("cancelling the turn (press Ctrl-C again to stop the agent now)")
					cancelTurn()
					continue
				}
				out.note("stopping the agent")
				agent.Close()
				return
			case <-turnDone:
				// An agent that never answers the cancellation is stopped.
				turnDone, giveUp = nil, time.After(runCancelWait)
			case <-giveUp:
				out.note(fmt.Sprintf("the agent did not end the turn within %v of the cancellation; stopping it", runCancelWait))
				agent.Close()
				return
			case <-finished:
				return
			}
		}
	}()

	stop, err := turn(turnCtx, conn, s.cwd, s.text, out.flush)
	agent.Stop(runStopGrace, runStopGrace)
	// The agent has exited: read to the end of what it wrote before closing
	// (a process it left holding the pipe open cannot keep us waiting long).
	drain := time.NewTimer(runDrainWait)
	select {
	case <-conn.Done():
	case <-drain.C:
	}
	drain.Stop()
	conn.Close() // delivers every queued event
	link.close()
	out.flush() // the governor's notices too
	if link.agentEnded(err) {
		err = acp.ErrAgentClosed
	}
	if err != nil {
		if link.ungoverned(err) {
			out.fail("the session cannot be governed; the prompt was not sent: " + strings.TrimPrefix(rpcMessage(err), "permhost: "))
			return exitRunUngoverned
		}
		if turnCtx.Err() != nil && !errors.Is(err, acp.ErrAgentClosed) {
			out.fail("cancelled before the turn started: " + err.Error())
			return exitRunCancelled
		}
		msg := err.Error()
		if errors.Is(err, acp.ErrAgentClosed) {
			msg = agent.ExitDescription() + " before the turn ended"
			if turnCtx.Err() != nil {
				// The person cancelled and then stopped the agent.
				out.fail(msg + " (cancelled)")
				return exitRunCancelled
			}
		}
		out.fail(msg)
		return exitRunAgent
	}
	out.stopped(stop)
	switch stop {
	case acp.StopEndTurn:
		return exitOK
	case acp.StopCancelled:
		return exitRunCancelled
	case acp.StopRefusal:
		return exitRunRefusal
	case acp.StopMaxTokens, acp.StopMaxTurnRequests:
		return exitRunLimit
	default:
		out.fail(fmt.Sprintf("the agent answered an unknown stop reason %q", stop))
		return exitRunAgent
	}
}

// syncWriter serialises writes to a writer shared by goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// turn runs initialize, session/new and the prompt; started is called
// between the last two (run shows the session's mode action there, before
// anything of the turn).
func turn(ctx context.Context, conn *acp.ClientConn, cwd, text string, started func()) (string, error) {
	if _, err := conn.Initialize(ctx); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	sid, err := conn.NewSession(ctx, cwd)
	if err != nil {
		return "", fmt.Errorf("session/new: %w", err)
	}
	started()
	return conn.Prompt(ctx, sid, text)
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
)

func init() {
	// As a proxy, permhost's session belongs to the editor: a terminal
	// client's Ctrl-C reaches the whole foreground process group, and the
	// client cancels the turn itself (session/cancel). SIGINT must not end
	// the agent; stdin's end or SIGTERM does.
	commands["proxy"] = command{summary: "run an ACP agent behind permhost (what an editor launches)", run: runProxy, ownsInterrupt: true}
}

// killGrace is how long the agent gets between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// agentOutputGrace is how long permhost waits for the agent to exit once
// its output has ended, before naming the exit in its error replies.
const agentOutputGrace = 2 * time.Second

func runProxy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("proxy", stderr)
	logLevel := fs.String("log-level", "info", "diagnostics level: debug, info, warn or error (diagnostics go to stderr)")
	grace := fs.Duration("shutdown-grace", 5*time.Second, "how long the agent gets to exit after the editor disconnects, before SIGTERM and then SIGKILL to its process group")
	maxLine := fs.Int("max-line-bytes", acp.DefaultMaxLineBytes, "largest accepted line from either side, in bytes")
	configFlag := fs.String("config", "", configUsage)
	leaderSocket := fs.String("leader", "", "also put each request the editor is asked about to the `permhost leader` at this socket (its terminal and web page); the first answer wins")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: permhost proxy [FLAGS] -- AGENT [ARGS...]")
		fmt.Fprintln(fs.Output(), "\nStarts AGENT and relays ACP between it and the editor on stdin/stdout.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "permhost proxy: no agent command given (permhost proxy [FLAGS] -- AGENT [ARGS...])")
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "permhost proxy: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return exitUsage
	}
	if *grace < 0 || *maxLine <= 0 {
		fmt.Fprintln(stderr, "permhost proxy: --shutdown-grace must not be negative and --max-line-bytes must be positive")
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "permhost-proxy")

	// Configuration mistakes stop permhost before the agent starts.
	cfg, err := loadConfig(ctx, *configFlag)
	if err != nil {
		printError(stderr, "permhost proxy", err)
		return exitUsage
	}
	if cfg == nil && *leaderSocket != "" {
		// The leader needs the pipeline even without plugins: every
		// request then goes to the editor and the leader.
		if cfg, err = config.Parse(nil, "(no configuration)", "."); err != nil {
			printError(stderr, "permhost proxy", err)
			return exitUsage
		}
	}
	engine, handler, err := newEngine(ctx, cfg, "proxy", logger)
	if err != nil {
		printError(stderr, "permhost proxy", err)
		return exitUsage
	}
	if *leaderSocket != "" {
		ask, err := leaderFunc(*leaderSocket, "", 0)
		if err != nil {
			printError(stderr, "permhost proxy", err)
			return exitUsage
		}
		engine.SetLeader(ask)
	}
	var governor acp.Governor
	if engine != nil {
		defer engine.Close(context.WithoutCancel(ctx))
		governor = engine.Governor()
	}

	// A write to a closed stdout must fail with EPIPE instead of killing
	// permhost. Notify (unlike Ignore) is not inherited by the agent.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	agent, err := acp.StartAgent(acp.AgentConfig{Argv: argv, Stderr: stderr, Logger: logger})
	if err != nil {
		logger.Error("cannot start the agent", "err", err)
		return exitFail
	}
	defer agent.Close()

	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	go func() {
		for range intr {
			logger.Info("SIGINT ignored: the editor owns the session (it cancels a turn with session/cancel); permhost ends when the editor closes its input, or on SIGTERM")
		}
	}()

	var stopOnce sync.Once
	stop := func(g time.Duration) {
		stopOnce.Do(func() { go agent.Stop(g, killGrace) })
	}
	var proxy *acp.Proxy
	proxy, err = acp.NewProxy(acp.Options{
		Handler:      handler,
		Governor:     governor,
		Logger:       logger,
		MaxLineBytes: *maxLine,
		AgentExit:    agentExit(agent),
		ClientDone: func() {
			logger.Debug("the editor disconnected; stopping the agent", "grace", *grace)
			// The agent's stdin closes once the editor's last lines are
			// written to it; an agent that does not read them gets the
			// same grace, after which Stop closes its stdin regardless,
			// then SIGTERM, then SIGKILL to its group.
			go func() {
				start := time.Now()
				t := time.NewTimer(*grace)
				defer t.Stop()
				select {
				case <-proxy.AgentInputClosed():
				case <-t.C:
				case <-agent.Done():
				}
				stop(max(0, *grace-time.Since(start)))
			}()
		},
	})
	if err != nil {
		logger.Error("proxy configuration", "err", err)
		return exitFail
	}
	go func() {
		select {
		case <-ctx.Done():
			logger.Info("signal received; stopping the agent", "grace", *grace)
			stop(*grace)
		case <-agent.Done():
		}
	}()

	err = proxy.Run(ctx, stdin, stdout, agent.Stdin(), agent.Stdout())
	if err != nil {
		logger.Error("proxy stopped", "err", err)
		stop(0)
		<-agent.Done()
		return exitFail
	}
	// The agent's output ended; it is exiting or must be made to.
	stop(*grace)
	<-agent.Done()
	return agent.ExitCode()
}

// agentExit is acp.Options.AgentExit for agent: how it ended, once it has
// exited (within agentOutputGrace of its output's end).
func agentExit(agent *acp.Agent) func(context.Context) string {
	return func(context.Context) string {
		t := time.NewTimer(agentOutputGrace)
		defer t.Stop()
		select {
		case <-agent.Done():
			return agent.ExitDescription()
		case <-t.C:
			return "the agent closed its output"
		}
	}
}

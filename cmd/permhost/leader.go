package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/internal/web"
	"github.com/permhost/permhost/policy"
)

func init() {
	commands["leader"] = command{summary: "answer the undecided requests of many `permhost run --leader` workers at one terminal", run: runLeader}
}

func runLeader(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("leader", stderr)
	socket := fs.String("socket", "", "Unix socket to listen on (required); its directory must be private to you and is created 0700 when missing")
	configFlag := fs.String("config", "", configUsage+"; its plugins run before the person is asked")
	webAddr := fs.String("web", "", "also serve the web approver on this host:port (loopback unless --web-cert and --web-key are given)")
	webCert := fs.String("web-cert", "", "TLS certificate file for --web (required for an address other than loopback)")
	webKey := fs.String("web-key", "", "TLS key file for --web")
	webSecret := fs.String("web-secret", "", "per-install secret file of --web (default $XDG_CONFIG_HOME/permhost/web-secret, created 0600 when missing)")
	logLevel := fs.String("log-level", "info", "diagnostics level: debug, info, warn or error (diagnostics go to stderr)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: permhost leader --socket PATH [--config FILE] [--web ADDR [--web-cert FILE --web-key FILE]]")
		fmt.Fprintln(fs.Output(), "\nListens for `permhost run --leader PATH` workers and puts the requests their plugins could not")
		fmt.Fprintln(fs.Output(), "decide to you, one at a time, in arrival order, after its own plugins. Stop it with Ctrl-C:")
		fmt.Fprintln(fs.Output(), "waiting workers then fall back to their own headless policy. `permhost proxy --leader PATH` joins too.")
		fmt.Fprintln(fs.Output(), "With --web ADDR a web page shows every pending request live and answers any of them; start-up")
		fmt.Fprintln(fs.Output(), "prints a one-time login link (permhost help web-approver).\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if *socket == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "permhost leader: --socket PATH is required and takes no arguments")
		fs.Usage()
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "permhost leader: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := loadConfig(ctx, *configFlag)
	if err != nil {
		printError(stderr, "permhost leader", err)
		return exitUsage
	}
	if cfg == nil {
		cfg = &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
	}
	dlog, err := policy.OpenConfiguredLog(cfg, logger)
	if err != nil {
		fmt.Fprintln(stderr, "permhost leader:", err)
		return exitFail
	}
	defer dlog.Close()
	var engine *policy.Engine
	if len(cfg.Plugins) > 0 || len(cfg.Bundles) > 0 {
		engine, err = policy.New(ctx, policy.Options{Config: cfg, Via: "leader", Logger: logger, Log: dlog})
		if err != nil {
			fmt.Fprintln(stderr, "permhost leader:", err)
			return exitFail
		}
		defer engine.Close(context.WithoutCancel(ctx))
		if err := engine.CheckConfig(ctx); err != nil {
			printError(stderr, "permhost leader", err)
			return exitUsage
		}
	}

	var person leader.Prompter = leader.PrompterFunc(func(context.Context, leader.Prompt) (string, error) {
		return "", errors.New("no terminal to ask at")
	})
	if f, ok := stdin.(*os.File); ok {
		if term, err := prompt.Open(f, stdout, prompt.Options{}); err == nil {
			person = &terminalPerson{term: term, out: stdout}
		}
	}
	_, onTerminal := person.(*terminalPerson)
	switch {
	case !onTerminal && *webAddr != "":
		// The page answers: the terminal's turn waits for it.
		person = leader.PrompterFunc(func(ctx context.Context, _ leader.Prompt) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
	case !onTerminal:
		fmt.Fprintln(stderr, "permhost leader: stdin is not a terminal: requests its plugins cannot decide go back to their workers, which fall back to their own policy")
	}

	var page *web.Server
	if *webAddr != "" {
		page, err = newWebServer(*webAddr, *webCert, *webKey, *webSecret, cfg, logger)
		if err != nil {
			printError(stderr, "permhost leader", err)
			return exitUsage
		}
	}
	srv, err := leader.Listen(ctx, leader.Options{
		Socket:   *socket,
		Prompter: person,
		Decide:   leaderDecider(engine),
		OnDecision: func(r leader.Record) {
			dlog.Write(leaderEntry(r, cfg.Strategy))
			if page != nil {
				page.Record(r)
			}
		},
		Logger: logger,
	})
	if err != nil {
		fmt.Fprintln(stderr, "permhost leader:", err)
		return exitFail
	}
	fmt.Fprintf(stderr, "permhost leader: listening on %s (pid %d)\n", srv.Socket(), os.Getpid())
	if page != nil {
		if err := startWeb(page, srv, stderr); err != nil {
			srv.Close()
			fmt.Fprintln(stderr, "permhost leader:", err)
			return exitFail
		}
		defer page.Close()
	}
	<-ctx.Done()
	fmt.Fprintln(stderr, "permhost leader: stopping; waiting workers fall back to their own policy")
	if err := srv.Close(); err != nil {
		logger.Warn("closing the socket", "err", err)
	}
	return exitOK
}

// terminalPerson asks at the terminal with the prompt of permhost run,
// under a line saying who asks and how many wait.
type terminalPerson struct {
	term *prompt.Terminal
	out  io.Writer
}

func (tp *terminalPerson) Ask(ctx context.Context, p leader.Prompt) (string, error) {
	waiting := p.Waiting
	if p.WaitingNow != nil {
		waiting = p.WaitingNow()
	}
	cwd := p.Worker.Cwd
	if cwd == "" {
		cwd = p.Request.Session.Cwd
	}
	fmt.Fprintf(tp.out, "\n── request #%d from %s, cwd %s · %d more waiting ──\n", p.Seq, p.Worker, safetext.Terminal(cwd), waiting)
	id, err := tp.term.Ask(ctx, personQuestion(p))
	if errors.Is(err, prompt.ErrDeclined) {
		return "", nil // the worker is answered cancelled
	}
	return id, err
}

// personQuestion turns a leader prompt into the terminal's question.
func personQuestion(p leader.Prompt) prompt.Question {
	req := p.Request
	q := prompt.Question{Title: req.ToolCall.Title, Kind: req.ToolCall.Kind, Reason: p.Reason,
		Deadline: p.Deadline, Expiry: "the worker decides by itself"}
	if req.Shell != nil {
		q.Command = req.Shell.Source
	}
	for _, path := range req.Paths {
		q.Paths = append(q.Paths, prompt.Path{Path: path.Path, Access: path.Access, Outside: !path.InsideCwd})
	}
	for _, x := range p.Explanations {
		q.Explanations = append(q.Explanations, prompt.Explanation{Plugin: x.Plugin, Summary: x.Summary,
			Risk: x.Risk, RiskLevel: x.RiskLevel, Reason: x.Reason})
	}
	for _, o := range p.Options {
		q.Options = append(q.Options, prompt.Option{ID: o.OptionID, Name: o.Name, Kind: o.Kind})
	}
	return q
}

// leaderDecider runs the leader's plugins on a worker's question; nil
// engine leaves everything to the person.
func leaderDecider(engine *policy.Engine) leader.Decider {
	if engine == nil {
		return nil
	}
	return func(ctx context.Context, q leader.Question) leader.Verdict {
		v := engine.Run(ctx, q.Request)
		out := leader.Verdict{Reason: v.Reason, Detail: v}
		if v.Decided() {
			out.Decided, out.DecidedBy = true, v.DecidedBy
			if v.Outcome != abi.OutcomeCancel {
				out.OptionID = v.OptionID
			}
			return out
		}
		for _, x := range v.Explanations {
			out.Explanations = append(out.Explanations, leader.Explanation{Plugin: x.Plugin, Summary: x.Explanation.Summary,
				Risk: x.Explanation.Risk, RiskLevel: x.Explanation.RiskLevel, Reason: x.Reason})
		}
		if v.Fallback != "" || v.StripDurable {
			out.Shown = []string{}
			for _, o := range builtin.PersonOptions(q.Request.Options) {
				out.Shown = append(out.Shown, o.OptionID)
			}
		}
		return out
	}
}

// leaderEntry is the leader's decision-log line for one worker request:
// Person.Who names the worker.
func leaderEntry(r leader.Record, strategy string) policy.LogEntry {
	req := r.Question.Request
	e := policy.LogEntry{
		DecisionID: req.DecisionID, Time: r.Arrived.UTC(), Via: "leader", Strategy: strategy,
		Session: req.Session.ID, Agent: req.Session.Agent, Cwd: policy.LogCwd(req.Session.Cwd),
		ToolCall: policy.LogToolCall{ID: req.ToolCall.ID, Title: req.ToolCall.Title, Kind: req.ToolCall.Kind,
			RawInputSHA256: policy.CanonicalSHA256(req.ToolCall.RawInput)},
		Options:   []policy.LogOption{},
		Plugins:   []policy.LogPlugin{},
		Outcome:   r.Outcome,
		OptionID:  r.OptionID,
		DecidedBy: r.DecidedBy,
		Reason:    r.Reason,
		LatencyUs: r.Ended.Sub(r.Arrived).Microseconds(),
	}
	for _, o := range req.Options {
		e.Options = append(e.Options, policy.LogOption{OptionID: o.OptionID, Kind: o.Kind, Durable: o.Durable})
		if o.OptionID == r.OptionID {
			e.OptionKind = o.Kind
		}
	}
	if v, ok := r.Detail.(host.Verdict); ok {
		e.Plugins = policy.LogPlugins(v.Votes)
		e.Fallback = v.Fallback
	}
	if e.DecidedBy == "" {
		e.DecidedBy = r.Outcome // withdrawn or undecided: nobody decided
	}
	who := r.Question.Worker.String()
	if r.By != "" && r.By != leader.ByTerminal {
		who = r.By + " for " + who // a browser of the web approver
	}
	if r.Prompted || e.DecidedBy == policy.ByPerson {
		p := &policy.LogPerson{Shown: []string{}, Answer: r.Answer, Refused: r.Refused, Who: who}
		for _, o := range r.Shown {
			p.Shown = append(p.Shown, o.OptionID)
		}
		if p.Answer == "" {
			p.Answer = r.Outcome
		}
		e.Person = p
	} else if e.Reason == "" {
		e.Reason = "for " + who
	} else {
		e.Reason += " (for " + who + ")"
	}
	return e
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/acp"
)

// This file makes permhost run a governed session ([session] modes or fs
// "govern"; RATIONALE.md, "permhost run is a governed session too"): the
// policy's Governor runs in an acp.Proxy of its own, in process, between
// run's ClientConn and the agent, so that what `permhost proxy` governs
// (a session's mode before the first prompt, the agent's own switches, its
// file requests, the tool calls it runs unasked) is governed by the same
// code. The proxy forwards every permission request to the ClientConn,
// whose headless handler decides it as without the proxy.

// exitRunUngoverned is run's exit status when the session cannot be
// governed: it starts in a mode that decides by itself and the agent
// refused (or offers no) switch to one that asks. The prompt is not sent.
const exitRunUngoverned = 7

// governedLink is the in-process proxy and its two pipes.
type governedLink struct {
	toProxy   *io.PipeWriter // the client writes the agent's input here
	fromProxy *io.PipeReader // the client reads the agent's output here
	cancel    context.CancelFunc
	done      chan struct{} // closed once the proxy's Run returned
	ended     atomic.Bool   // the agent's output ended (AgentExit ran)
	once      sync.Once
}

// linkGoverned starts the proxy between the client and agent.
func linkGoverned(agent *acp.Agent, gov acp.Governor, logger *slog.Logger) (*governedLink, error) {
	clientIn, toProxy := io.Pipe()
	fromProxy, clientOut := io.Pipe()
	l := &governedLink{toProxy: toProxy, fromProxy: fromProxy, done: make(chan struct{})}
	exit := agentExit(agent)
	proxy, err := acp.NewProxy(acp.Options{Governor: gov, Logger: logger,
		AgentExit: func(ctx context.Context) string {
			l.ended.Store(true)
			return exit(ctx)
		}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		_ = proxy.Run(ctx, clientIn, clientOut, agent.Stdin(), agent.Stdout())
		// What the proxy wrote is read to its end, then the client sees
		// the agent's output end. (The proxy's read of the client ends
		// when the client closes its output: close, or ClientConn.Close.)
		clientOut.Close()
	}()
	return l, nil
}

// agentEnded reports whether err is the proxy's answer to a request the
// agent left unanswered when its output ended ("permhost: the agent
// exited ... before answering session/prompt"): without the proxy the
// client would have seen the output end itself (acp.ErrAgentClosed).
func (l *governedLink) agentEnded(err error) bool {
	var rpc *acp.RPCError
	return l != nil && l.ended.Load() && errors.As(err, &rpc) && rpc.Code == acp.CodeInternalError &&
		strings.HasPrefix(rpc.Message, "permhost: ") && strings.Contains(rpc.Message, " before answering ")
}

// ungoverned reports whether err is the governor's refusal of the session
// (acp.CodePolicyRefused answering session/new).
func (l *governedLink) ungoverned(err error) bool {
	var rpc *acp.RPCError
	return l != nil && errors.As(err, &rpc) && rpc.Code == acp.CodePolicyRefused
}

// close ends the pipes and waits, a bounded time, for the proxy to end
// (it ends when the agent's output does). It is idempotent.
func (l *governedLink) close() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		l.toProxy.Close()
		l.fromProxy.Close()
		l.cancel()
		t := time.NewTimer(runDrainWait)
		defer t.Stop()
		select {
		case <-l.done:
		case <-t.C:
		}
	})
}

// rpcMessage is the message of the JSON-RPC error in err.
func rpcMessage(err error) string {
	var rpc *acp.RPCError
	if errors.As(err, &rpc) {
		return rpc.Message
	}
	return err.Error()
}

package leader

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
)

// Three workers ask at once; the person sees one request at a time, in
// arrival order, with the right count of waiting ones, and each answer
// reaches the worker and request it was given for.
func TestOneAtATimeInArrivalOrder(t *testing.T) {
	p := newPerson(t)
	recs := newRecords()
	s := startServer(t, Options{Prompter: p, OnDecision: recs.add})
	c, err := NewClient(s.Socket())
	if err != nil {
		t.Fatal(err)
	}
	titles := []string{"npm test", "rm -rf build", "git push"}
	answers := []string{"allow", "reject", "allow_always"}
	var results []<-chan asked
	for i, title := range titles {
		results = append(results, askAsync(context.Background(), c, question(title)))
		waitQueued(t, s, i+1) // arrival order is the order the test asked in
	}
	for i, title := range titles {
		pr := p.next()
		// The first was shown when it arrived alone; the others wait
		// behind it.
		wantWaiting := len(titles) - 1 - i
		if i == 0 {
			if pr.Waiting != 0 || pr.WaitingNow() != 2 {
				t.Fatalf("first prompt: waiting %d when shown, %d now; want 0 and 2", pr.Waiting, pr.WaitingNow())
			}
			wantWaiting = 0
		}
		if pr.Request.ToolCall.Title != title || pr.Seq != uint64(i+1) || pr.Waiting != wantWaiting {
			t.Fatalf("prompt %d: got %q seq %d waiting %d; want %q seq %d waiting %d",
				i, pr.Request.ToolCall.Title, pr.Seq, pr.Waiting, title, i+1, wantWaiting)
		}
		if pr.Worker.PID != os.Getpid() || pr.Worker.Session != "sess-"+title || pr.Worker.Agent != "claude-agent-acp" {
			t.Fatalf("prompt %d worker = %+v", i, pr.Worker)
		}
		p.noPrompt(30 * time.Millisecond) // the next one waits for this answer
		p.answer(answers[i])
		r := wait(t, results[i])
		if r.err != nil || r.a.OptionID != answers[i] || r.a.DecidedBy != "person" || r.a.Leader.PID != os.Getpid() {
			t.Fatalf("worker %d got %+v, %v; want %s by person", i, r.a, r.err, answers[i])
		}
		rec := recs.next(t)
		if rec.Seq != uint64(i+1) || rec.Outcome != OutcomeSelected || rec.OptionID != answers[i] || !rec.Prompted || rec.Answer != answers[i] {
			t.Fatalf("record %d = %+v", i, rec)
		}
	}
	if p.overlap {
		t.Fatal("two prompts were shown at once")
	}
}

// The leader's plugins answer what they can at once, even while the person
// is busy with another request, and what they leave goes to the person
// with their explanations and narrowed options.
func TestLeaderPluginsFirst(t *testing.T) {
	p := newPerson(t)
	recs := newRecords()
	decide := func(ctx context.Context, q Question) Verdict {
		switch q.Request.ToolCall.Title {
		case "auto-allow":
			return Verdict{Decided: true, OptionID: "allow", DecidedBy: "team-rules", Reason: "npm test is allowed", Detail: "votes"}
		case "auto-cancel":
			return Verdict{Decided: true, DecidedBy: "plan-mode", Reason: "no reject option"}
		case "not-shown":
			// The worker restricted the person to one-time options: a
			// plugin may not widen that.
			return Verdict{Decided: true, OptionID: "allow_always", DecidedBy: "greedy"}
		}
		return Verdict{Explanations: []Explanation{{Plugin: "explainer", Summary: "deletes build", RiskLevel: "medium"}},
			Shown: []string{"allow", "reject"}}
	}
	s := startServer(t, Options{Prompter: p, Decide: decide, OnDecision: recs.add})
	c, _ := NewClient(s.Socket())

	first := askAsync(context.Background(), c, question("ask-person"))
	pr := p.next()
	if got := ids(pr.Options); !slices.Equal(got, []string{"allow", "reject"}) {
		t.Fatalf("person offered %v, want the leader's narrowed [allow reject]", got)
	}
	if len(pr.Explanations) != 1 || pr.Explanations[0].Plugin != "explainer" {
		t.Fatalf("explanations = %+v", pr.Explanations)
	}
	// While that prompt is up, plugin-decided requests are answered.
	r := wait(t, askAsync(context.Background(), c, question("auto-allow")))
	if r.err != nil || r.a.OptionID != "allow" || r.a.DecidedBy != "team-rules" {
		t.Fatalf("auto-allow: %+v, %v", r.a, r.err)
	}
	if rec := recs.next(t); rec.DecidedBy != "team-rules" || rec.Prompted || rec.Detail != "votes" {
		t.Fatalf("record = %+v", rec)
	}
	r = wait(t, askAsync(context.Background(), c, question("auto-cancel")))
	if r.err != nil || r.a.OptionID != "" || r.a.DecidedBy != "plan-mode" {
		t.Fatalf("auto-cancel: %+v, %v", r.a, r.err)
	}
	recs.next(t)
	p.answer("reject")
	if r := wait(t, first); r.err != nil || r.a.OptionID != "reject" {
		t.Fatalf("ask-person: %+v, %v", r.a, r.err)
	}
	recs.next(t)

	q := question("not-shown")
	q.Shown = []string{"allow", "reject"}
	res := askAsync(context.Background(), c, q)
	pr = p.next()
	if pr.Request.ToolCall.Title != "not-shown" || slices.Contains(ids(pr.Options), "allow_always") {
		t.Fatalf("a plugin's choice of a hidden option must go to the person with hidden options still hidden: %+v", pr)
	}
	p.answer("allow")
	if r := wait(t, res); r.err != nil || r.a.OptionID != "allow" {
		t.Fatalf("not-shown: %+v, %v", r.a, r.err)
	}
}

func ids(options []abi.Option) []string {
	var out []string
	for _, o := range options {
		out = append(out, o.OptionID)
	}
	return out
}

// A worker whose context ends withdraws its request: queued, it leaves the
// queue without ever being shown; shown, its prompt is retracted.
func TestWithdraw(t *testing.T) {
	p := newPerson(t)
	recs := newRecords()
	s := startServer(t, Options{Prompter: p, OnDecision: recs.add})
	c, _ := NewClient(s.Socket())

	first := askAsync(context.Background(), c, question("first"))
	waitQueued(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	second := askAsync(ctx, c, question("second"))
	waitQueued(t, s, 2)
	third := askAsync(context.Background(), c, question("third"))
	q := waitQueued(t, s, 3)
	if q[1].Request.ToolCall.Title != "second" {
		t.Fatalf("queue = %v", titlesOf(q))
	}
	if pr := p.next(); pr.Request.ToolCall.Title != "first" || pr.WaitingNow() != 2 {
		t.Fatalf("first prompt = %q waiting %d", pr.Request.ToolCall.Title, pr.WaitingNow())
	}

	cancel()
	r := wait(t, second)
	if !errors.Is(r.err, ErrWithdrawn) || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled worker got %v, want ErrWithdrawn wrapping context.Canceled", r.err)
	}
	if rec := recs.next(t); rec.Question.Request.ToolCall.Title != "second" || rec.Outcome != OutcomeWithdrawn || rec.Prompted {
		t.Fatalf("record = %+v", rec)
	}
	if got := titlesOf(waitQueued(t, s, 2)); !slices.Equal(got, []string{"first", "third"}) {
		t.Fatalf("queue after withdrawal = %v", got)
	}

	p.answer("allow")
	wait(t, first)
	recs.next(t)
	pr := p.next()
	if pr.Request.ToolCall.Title != "third" || pr.Waiting != 0 {
		t.Fatalf("after the withdrawn one: prompt %q waiting %d, want third waiting 0", pr.Request.ToolCall.Title, pr.Waiting)
	}

	// Withdrawn while shown: the prompt is retracted.
	ctx4, cancel4 := context.WithCancel(context.Background())
	p.answer("reject")
	wait(t, third)
	recs.next(t)
	fourth := askAsync(ctx4, c, question("fourth"))
	p.next()
	cancel4()
	if r := wait(t, fourth); !errors.Is(r.err, ErrWithdrawn) {
		t.Fatalf("fourth: %v", r.err)
	}
	select {
	case pr := <-p.retract:
		if pr.Request.ToolCall.Title != "fourth" {
			t.Fatalf("retracted %q", pr.Request.ToolCall.Title)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shown prompt was not retracted")
	}
	if rec := recs.next(t); rec.Outcome != OutcomeWithdrawn || !rec.Prompted || rec.Answer != OutcomeWithdrawn {
		t.Fatalf("record = %+v", rec)
	}
	waitQueued(t, s, 0)
}

func titlesOf(q []Prompt) []string {
	var out []string
	for _, p := range q {
		out = append(out, p.Request.ToolCall.Title)
	}
	return out
}

// A leader that closes answers nothing: the waiting worker learns at once
// and falls back; with no leader at all, Ask fails without waiting.
func TestLeaderGone(t *testing.T) {
	p := newPerson(t)
	recs := newRecords()
	s := startServer(t, Options{Prompter: p, OnDecision: recs.add})
	c, _ := NewClient(s.Socket())
	res := askAsync(context.Background(), c, question("mid-question"))
	p.next()
	s.Close()
	r := wait(t, res)
	if !errors.Is(r.err, ErrGone) {
		t.Fatalf("worker got %v, want ErrGone", r.err)
	}
	if rec := recs.next(t); rec.Outcome != OutcomeUndecided || !rec.Prompted {
		t.Fatalf("record = %+v", rec)
	}
	if _, err := os.Stat(s.Socket()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	_, err := c.Ask(context.Background(), question("nobody"))
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Ask with no leader = %v, want ErrUnreachable", err)
	}
}

// Answers the person cannot give: declining answers cancelled; a prompt
// that fails or names a hidden option tells the worker to fall back.
func TestPersonAnswers(t *testing.T) {
	tests := []struct {
		name    string
		shown   []string
		answer  string
		fail    bool
		wantOpt string
		wantErr string // a RefusedError code
		refused bool
	}{
		{name: "chosen", answer: "allow", wantOpt: "allow"},
		{name: "declined", answer: "", wantOpt: ""},
		{name: "hidden option", shown: []string{"allow", "reject"}, answer: "allow_always", wantErr: CodeUndecided, refused: true},
		{name: "never offered", answer: "yolo", wantErr: CodeUndecided, refused: true},
		{name: "prompt fails", fail: true, wantErr: CodeUndecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := newRecords()
			prompter := PrompterFunc(func(ctx context.Context, p Prompt) (string, error) {
				if tt.fail {
					return "", errors.New("no terminal")
				}
				return tt.answer, nil
			})
			s := startServer(t, Options{Prompter: prompter, OnDecision: recs.add})
			c, _ := NewClient(s.Socket())
			q := question(tt.name)
			q.Shown = tt.shown
			a, err := c.Ask(context.Background(), q)
			rec := recs.next(t)
			if tt.wantErr != "" {
				var re *RefusedError
				if !errors.As(err, &re) || re.Code != tt.wantErr {
					t.Fatalf("Ask = %+v, %v; want a %s refusal", a, err, tt.wantErr)
				}
				if rec.Outcome != OutcomeUndecided || rec.Refused != tt.refused {
					t.Fatalf("record = %+v", rec)
				}
				return
			}
			if err != nil || a.OptionID != tt.wantOpt || a.DecidedBy != "person" {
				t.Fatalf("Ask = %+v, %v; want %q by person", a, err, tt.wantOpt)
			}
		})
	}
}

// The client checks the leader's answer against the options of its own
// question, whatever the leader says.
func TestClientRefusesUnofferedAnswer(t *testing.T) {
	tests := []struct {
		name, outcome, option string
	}{
		{"not offered", OutcomeSelected, "yolo"},
		{"hidden", OutcomeSelected, "allow_always"},
		{"cancelled with option", OutcomeCancelled, "allow"},
		{"unknown outcome", "approved", "allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := socketPath(t)
			fake := fakeLeader(t, path, func(id string) *message {
				return &message{Type: TypeAnswer, ID: id, Outcome: tt.outcome, OptionID: tt.option}
			})
			defer fake()
			c, _ := NewClient(path)
			q := question("x")
			q.Shown = []string{"allow", "reject"}
			_, err := c.Ask(context.Background(), q)
			if !errors.Is(err, ErrNotOffered) {
				t.Fatalf("Ask = %v, want ErrNotOffered", err)
			}
		})
	}
}

// A question the client cannot send is refused before dialing.
func TestClientBadQuestion(t *testing.T) {
	c, _ := NewClient(socketPath(t))
	big := question("big")
	big.Request.Raw = []byte(`"` + strings.Repeat("x", MaxMessageBytes) + `"`)
	hidden := question("hidden")
	hidden.Shown = []string{"nope"}
	none := question("none")
	none.Request.Options = nil
	for name, q := range map[string]Question{"over the bound": big, "shown not offered": hidden, "no options": none} {
		if _, err := c.Ask(context.Background(), q); !errors.Is(err, ErrBadQuestion) {
			t.Errorf("%s: Ask = %v, want ErrBadQuestion", name, err)
		}
	}
	if _, err := NewClient(""); err == nil {
		t.Error("NewClient(\"\") succeeded")
	}
	if _, err := NewClient("/" + strings.Repeat("d", 200)); err == nil {
		t.Error("NewClient accepted a path longer than sun_path")
	}
}

// The worker's deadline travels with its question, for the person to see.
func TestDeadlineShown(t *testing.T) {
	p := newPerson(t)
	s := startServer(t, Options{Prompter: p})
	c, _ := NewClient(s.Socket())
	deadline := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	res := askAsync(ctx, c, question("timed"))
	if pr := p.next(); !pr.Deadline.Equal(deadline) {
		t.Fatalf("prompt deadline %v, want %v", pr.Deadline, deadline)
	}
	p.answer("allow")
	wait(t, res)
}

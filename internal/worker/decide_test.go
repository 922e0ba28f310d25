package worker

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/hostlink"
)

// TestDecidePayload: a decide frame carries what the child's check of a
// decision reads of each option, and the request's JSON exactly as the
// host gives it to a plugin.
func TestDecidePayload(t *testing.T) {
	req := request("d1", "plain")
	req.Options = append(req.Options,
		abi.Option{OptionID: "edit-known", Kind: abi.OptionAllowOnce, Durable: true, Changes: &abi.ChangeSet{Known: true}},
		abi.Option{OptionID: "edit-unknown", Kind: abi.OptionAllowAlways, Durable: true, Changes: &abi.ChangeSet{}},
		abi.Option{OptionID: "", Kind: ""})
	b, err := appendDecide(nil, &req)
	require.NoError(t, err)
	options, input, err := parseDecide(b)
	require.NoError(t, err)
	want, err := hostlink.AppendRequest(nil, &req)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(input))
	require.Len(t, options, len(req.Options))
	for i, o := range req.Options {
		assert.Equal(t, o.OptionID, options[i].OptionID)
		assert.Equal(t, o.Kind, options[i].Kind)
		assert.Equal(t, o.Durable, options[i].Durable)
		assert.Equal(t, o.Changes != nil, options[i].Changes != nil)
		if o.Changes != nil {
			assert.Equal(t, o.Changes.Known, options[i].Changes.Known)
		}
	}
	// Every decision is checked against them as against the originals.
	for _, d := range []abi.Decision{{Outcome: abi.OutcomeAllow}, {Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways},
		{Outcome: abi.OutcomeReject}, {Outcome: abi.OutcomeSelect, OptionID: "edit-unknown"},
		{Outcome: abi.OutcomeSelect, OptionID: "nope"}} {
		o1, ok1 := d.Option(req.Options)
		o2, ok2 := d.Option(options)
		assert.Equal(t, ok1, ok2, "%+v", d)
		assert.Equal(t, o1.OptionID, o2.OptionID, "%+v", d)
		assert.Equal(t, d.Validate(req.Options), d.Validate(options), "%+v", d)
	}
	// Cut anywhere in the options, it is refused.
	n := len(b) - len(input)
	for i := range n {
		_, _, err := parseDecide(b[:i])
		assert.ErrorIs(t, err, ErrProtocol, "cut at %d", i)
	}
}

// TestUnencodableRequest: a request the host cannot encode fails as it
// does in process, before the child hears of it; the child serves on.
func TestUnencodableRequest(t *testing.T) {
	ctx := context.Background()
	req := request("u1", "plain")
	req.Raw = json.RawMessage(`{"not json`)
	in, err := host.Load(ctx, host.Options{Path: fixture(t, "good"), CacheDir: testCache})
	require.NoError(t, err)
	defer in.Close(ctx)
	want := in.Call(ctx, req)
	require.Error(t, want.Err)

	p := startWorker(t, host.Options{Path: fixture(t, "good")})
	pid := p.pid()
	got := p.Call(ctx, req)
	assert.Equal(t, host.KindOf(want.Err), host.KindOf(got.Err), "%v", got.Err)
	assert.Equal(t, want.Err.Error(), got.Err.Error())
	r := p.Call(ctx, request("u2", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, pid, p.pid())
}

// FuzzParseDecide: the child's reading of a decide frame never panics and
// never reads more options than the frame holds.
func FuzzParseDecide(f *testing.F) {
	req := request("f", "plain")
	b, _ := appendDecide(nil, &req)
	f.Add(b)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		options, input, err := parseDecide(b)
		if err != nil {
			return
		}
		if 3*len(options)+len(input) > len(b) {
			t.Fatalf("%d options and %d bytes of input from %d bytes", len(options), len(input), len(b))
		}
	})
}

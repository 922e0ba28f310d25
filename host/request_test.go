package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/sandbox"
)

// A plugin receives the shared encoding with its config spliced in: byte
// for byte what encoding the whole request with that config gives.
func TestEncodedRequestSplicesConfig(t *testing.T) {
	base := request1K(t)
	for _, tc := range []struct {
		name          string
		plugin, inReq json.RawMessage
	}{
		{"no config", nil, nil},
		{"the plugin's own", json.RawMessage(`{"mode":"strict","n":[1,2]}`), nil},
		{"the plugin's own over the request's", json.RawMessage(`{"mode":"strict"}`), json.RawMessage(`{"mode":"other"}`)},
		{"the request's, spaced and with HTML", nil, json.RawMessage(` { "a" : "<&>" , "b" : [ 1 ] } `)},
		{"the request's null", nil, json.RawMessage(`null`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			req.Config = tc.inReq
			want := req
			if tc.plugin != nil {
				want.Config = tc.plugin
			}
			r := newEncodedRequest(req)
			require.NoError(t, r.err)
			p := &Plugin{config: tc.plugin, limits: sandbox.Limits{MaxInput: 1 << 20}}
			config, size := r.forPlugin(p)
			inst := &instance{}
			r.setInput(inst, config)
			assert.Equal(t, string(plainEncoding(t, want)), string(inst.input))
			assert.Equal(t, len(inst.input), size, "the size checked is the size sent")
		})
	}
}

// The chain encodes a request once for all its plugins, and each plugin
// checks the size it would receive against its own MaxInput before an
// instance is taken: a plugin with a small limit fails input-too-large,
// the others decide on the same encoding.
func TestChainEncodesOncePerDecision(t *testing.T) {
	var encodings atomic.Int32
	testHookEncode = func() { encodings.Add(1) }
	t.Cleanup(func() { testHookEncode = nil })

	small := load(t, "echo", Options{Name: "small", PoolSize: 1, Limits: sandbox.Limits{MaxInput: 1000}})
	big := load(t, "echo", Options{Name: "big", PoolSize: 1})
	withConfig := load(t, "echo", Options{Name: "config", PoolSize: 1, Config: json.RawMessage(`{"mode":"strict"}`)})
	before, _ := settled(t, small)
	c, err := NewChain(ChainOptions{Members: []Member{
		{Name: "small", Layer: LayerUser, Policy: FailAbstain, Plugin: small},
		{Name: "big", Layer: LayerUser, Policy: FailClosed, Plugin: big},
		{Name: "config", Layer: LayerUser, Policy: FailClosed, Plugin: withConfig},
	}})
	require.NoError(t, err)
	encodings.Store(0)
	id := strings.Repeat("x", 2000)
	v := c.Run(context.Background(), request(id))
	assert.Equal(t, int32(1), encodings.Load(), "encodings for one decision of three plugins")
	require.Len(t, v.Votes, 3)
	requireKind(t, v.Votes[0].Err, KindInputTooLarge)
	for _, vote := range v.Votes[1:] {
		require.NoError(t, vote.Err, vote.Plugin)
		assert.Equal(t, id, vote.Decision.Reason, "%s decided on the request", vote.Plugin)
	}
	assert.Equal(t, abi.OutcomeAllow, v.Outcome)
	after, live := settled(t, small)
	assert.ElementsMatch(t, before, after, "the refused plugin's instance was not taken")
	assert.Equal(t, len(before), live)
	assert.Equal(t, small.SHA256(), v.Votes[0].SHA256, "a vote names the plugin's sha256")
}

// BenchmarkLargeRequestThreePlugins: one decision of three plugins on a
// request of about 1 MiB, through the chain (one encoding, shared) and as
// three separate calls (one encoding each, as the chain did before).
func BenchmarkLargeRequestThreePlugins(b *testing.B) {
	req := request1K(b)
	req.Raw = json.RawMessage(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	var members []Member
	var plugins []*Plugin
	for _, name := range []string{"a", "b", "c"} {
		p := load(b, "constant", Options{Name: name, PoolSize: 1, Limits: sandbox.Limits{Timeout: 10 * time.Second}})
		plugins = append(plugins, p)
		members = append(members, Member{Name: name, Layer: LayerUser, Policy: FailClosed, Plugin: p})
	}
	c, err := NewChain(ChainOptions{Members: members})
	require.NoError(b, err)
	ctx := context.Background()
	b.Run("chain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := c.Run(ctx, req); v.Votes[2].Err != nil {
				b.Fatal(v.Votes[2].Err)
			}
		}
	})
	b.Run("separate-calls", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range plugins {
				if r := p.Call(ctx, req); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	})
}

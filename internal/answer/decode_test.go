package answer

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/jsontext"
)

func TestDecodeResult(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Reply
		err      error
	}{
		{"selected", `{"outcome":{"outcome":"selected","optionId":"allow"}}`, Selected("allow"), nil},
		{"cancelled", ` { "outcome" : { "outcome" : "cancelled" } } `, Cancelled(), nil},
		{"escaped", `{"outcome":{"outcome":"sel\u0065cted","optionId":"\u0061llow"}}`, Selected("allow"), nil},
		{"metas", `{"outcome":{"outcome":"selected","optionId":"a","_meta":{"k":[1, 2]}},"_meta":{"by":"zed"}}`,
			Reply{Outcome: OutcomeSelected, OptionID: "a", OutcomeMeta: json.RawMessage(`{"k":[1, 2]}`), Meta: json.RawMessage(`{"by":"zed"}`)}, nil},
		{"null meta dropped", `{"outcome":{"outcome":"cancelled"},"_meta":null}`, Cancelled(), nil},
		{"non-object meta dropped", `{"outcome":{"outcome":"selected","optionId":"a","_meta":"x"}}`, Selected("a"), nil},

		// The smuggling of issue 15: each spelling another parser may read.
		{"case-folded duplicate optionId", `{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}`, Reply{}, ErrMalformed},
		{"case-folded duplicate outcome", `{"outcome":{"outcome":"selected","optionId":"x","Outcome":"cancelled"}}`, Reply{}, ErrMalformed},
		{"exact duplicate", `{"outcome":{"outcome":"selected","optionId":"a","optionId":"b"}}`, Reply{}, ErrMalformed},
		{"escaped duplicate", `{"outcome":{"outcome":"selected","optionId":"a","\u006fptionId":"b"}}`, Reply{}, ErrMalformed},
		{"duplicate result key", `{"outcome":{"outcome":"cancelled"},"OUTCOME":{"outcome":"selected","optionId":"a"}}`, Reply{}, ErrMalformed},
		{"duplicate inside meta", `{"outcome":{"outcome":"cancelled"},"_meta":{"a":1,"A":2}}`, Reply{}, ErrMalformed},
		{"case-folded key alone", `{"outcome":{"outcome":"selected","OptionId":"a"}}`, Reply{}, ErrMalformed},
		{"Kelvin sign", `{"outcome":{"outcome":"selected","optionId":"a","_meta":{}},"_meta":{"` + "\u212a" + `":1,"k":2}}`, Reply{}, ErrMalformed},
		{"unknown key", `{"outcome":{"outcome":"selected","optionId":"a","scope":"always"}}`, Reply{}, ErrMalformed},
		{"unknown result key", `{"outcome":{"outcome":"cancelled"},"extra":1}`, Reply{}, ErrMalformed},
		{"cancelled with option", `{"outcome":{"outcome":"cancelled","optionId":"a"}}`, Reply{}, ErrMalformed},
		{"cancelled with meta", `{"outcome":{"outcome":"cancelled","_meta":{}}}`, Reply{}, ErrMalformed},
		{"selected without option", `{"outcome":{"outcome":"selected"}}`, Reply{}, ErrMalformed},
		{"empty option", `{"outcome":{"outcome":"selected","optionId":""}}`, Reply{}, ErrMalformed},
		{"option not a string", `{"outcome":{"outcome":"selected","optionId":5}}`, Reply{}, ErrMalformed},
		{"unknown outcome", `{"outcome":{"outcome":"allow"}}`, Reply{}, ErrMalformed},
		{"flat outcome", `{"outcome":"cancelled"}`, Reply{}, ErrMalformed},
		{"no outcome", `{}`, Reply{}, ErrMalformed},
		{"invalid UTF-8", "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"\xff\"}}", Reply{}, ErrMalformed},
		{"lone surrogate", `{"outcome":{"outcome":"selected","optionId":"\ud800"}}`, Reply{}, ErrMalformed},
		{"not JSON", `{"outcome":`, Reply{}, ErrMalformed},
		{"null", `null`, Reply{}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeResult([]byte(tc.in))
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if got.Outcome != tc.want.Outcome || got.OptionID != tc.want.OptionID ||
				string(got.Meta) != string(tc.want.Meta) || string(got.OutcomeMeta) != string(tc.want.OutcomeMeta) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeResponse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		id       string
		reply    Reply
		rpcErr   *RPCError
		err      error
	}{
		{"result", `{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}`, `5`, Selected("a"), nil, nil},
		{"id last, no jsonrpc", `{"result":{"outcome":{"outcome":"cancelled"}},"id":"x"}`, `"x"`, Cancelled(), nil, nil},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no","data":{"d":1}}}`, `1`, Reply{}, &RPCError{Code: -32603, Message: "no", Data: json.RawMessage(`{"d":1}`)}, nil},
		{"both", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"result":{"outcome":{"outcome":"selected","optionId":"a"}}}`, "", Reply{}, nil, ErrMalformed},
		{"neither", `{"jsonrpc":"2.0","id":1}`, "", Reply{}, nil, ErrMalformed},
		{"no id", `{"jsonrpc":"2.0","result":{"outcome":{"outcome":"cancelled"}}}`, "", Reply{}, nil, ErrMalformed},
		{"two ids", `{"jsonrpc":"2.0","id":1,"ID":2,"result":{"outcome":{"outcome":"cancelled"}}}`, "", Reply{}, nil, ErrMalformed},
		{"case-folded result", `{"jsonrpc":"2.0","id":1,"Result":{"outcome":{"outcome":"cancelled"}}}`, "", Reply{}, nil, ErrMalformed},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`, "", Reply{}, nil, ErrMalformed},
		{"extra member", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}},"_meta":{}}`, "", Reply{}, nil, ErrMalformed},
		{"float code", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, "", Reply{}, nil, ErrMalformed},
		{"error extra key", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","Code":2}}`, "", Reply{}, nil, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeResponse([]byte(tc.in))
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if string(got.ID) != tc.id || got.Reply.Outcome != tc.reply.Outcome || got.Reply.OptionID != tc.reply.OptionID {
				t.Fatalf("got %+v", got)
			}
			if (got.Error == nil) != (tc.rpcErr == nil) || (got.Error != nil && (got.Error.Code != tc.rpcErr.Code || got.Error.Message != tc.rpcErr.Message || string(got.Error.Data) != string(tc.rpcErr.Data))) {
				t.Fatalf("error %+v, want %+v", got.Error, tc.rpcErr)
			}
		})
	}
}

func TestCheckAndFromOutcome(t *testing.T) {
	offered := func(id string) bool { return id == "allow" || id == "reject" }
	if err := Selected("allow").Check(offered); err != nil {
		t.Errorf("offered option: %v", err)
	}
	if err := Cancelled().Check(offered); err != nil {
		t.Errorf("cancelled: %v", err)
	}
	if err := Selected("allow_always").Check(offered); !errors.Is(err, ErrNotOffered) {
		t.Errorf("option not offered: %v", err)
	}
	for _, tc := range []struct {
		outcome, option string
		err             error
	}{
		{"selected", "allow", nil},
		{"cancelled", "", nil},
		{"selected", "", ErrMalformed},
		{"cancelled", "allow", ErrMalformed},
		{"Selected", "allow", ErrMalformed},
		{"", "", ErrMalformed},
	} {
		r, err := FromOutcome(tc.outcome, tc.option)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("FromOutcome(%q, %q) = %+v, %v; want %v", tc.outcome, tc.option, r, err, tc.err)
		}
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		r    Reply
		want string
	}{
		{"selected", `7`, Selected("allow"), `{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`},
		{"cancelled, string id kept as written", ` "perm-\u26a1" `, Cancelled(), `{"jsonrpc":"2.0","id":"perm-\u26a1","result":{"outcome":{"outcome":"cancelled"}}}`},
		{"big id", `9007199254740993`, Cancelled(), `{"jsonrpc":"2.0","id":9007199254740993,"result":{"outcome":{"outcome":"cancelled"}}}`},
		{"metas compacted", `1`, Reply{Outcome: OutcomeSelected, OptionID: "a<&>\"", OutcomeMeta: json.RawMessage("{ \"k\" :\n [1, \"a b\"] }"), Meta: json.RawMessage(`{"n":12345678901234567890}`)},
			`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"a<&>\"","_meta":{"k":[1,"a b"]}},"_meta":{"n":12345678901234567890}}}`},
		{"cancelled never carries an outcome meta", `1`, Reply{Outcome: OutcomeCancelled, OutcomeMeta: json.RawMessage(`{}`)}, `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Encode([]byte(tc.id), tc.r))
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			back, err := DecodeResponse([]byte(got))
			if err != nil || back.Reply.Outcome != tc.r.Outcome || back.Reply.OptionID != tc.r.OptionID {
				t.Fatalf("what permhost encodes does not decode back: %+v, %v", back, err)
			}
		})
	}
	got := string(EncodeError([]byte(`3`), RPCError{Code: -32603, Message: "no \"way\"", Data: json.RawMessage(`{"a":1,"A":2}`)}))
	if want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no \"way\""}}`; got != want {
		t.Errorf("EncodeError = %s, want %s (data with a duplicate key left out)", got, want)
	}
}

// FuzzDecodeResponse: whatever DecodeResponse accepts, encoding/json reads
// the same outcome and option from, and permhost's re-encoding decodes to
// the same Reply; nothing it accepts has a case-variant key.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"outcome":{"outcome":"cancelled"},"_meta":{"a":[1]}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := DecodeResponse(b)
		if err != nil {
			return
		}
		if strings.Contains(strings.ToLower(string(b)), `"outcome"`) && resp.Error == nil {
			var std struct {
				Result struct {
					Outcome struct {
						Outcome  string `json:"outcome"`
						OptionID string `json:"optionId"`
					} `json:"outcome"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &std); err == nil && (std.Result.Outcome.Outcome != resp.Reply.Outcome || std.Result.Outcome.OptionID != resp.Reply.OptionID) {
				t.Fatalf("encoding/json reads %+v, DecodeResponse %+v", std.Result.Outcome, resp.Reply)
			}
		}
		if resp.Error != nil {
			return
		}
		again, err := DecodeResponse(Encode(resp.ID, resp.Reply))
		if err != nil || again.Reply.Outcome != resp.Reply.Outcome || again.Reply.OptionID != resp.Reply.OptionID ||
			string(again.Reply.Meta) != string(compactOf(resp.Reply.Meta)) {
			t.Fatalf("re-encoding changed the answer: %+v -> %+v, %v", resp.Reply, again.Reply, err)
		}
	})
}

func compactOf(b []byte) []byte {
	if b == nil {
		return nil
	}
	return jsontext.AppendCompact(nil, b)
}

func TestDecodeEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name, in, result string
		err              error
	}{
		{"result left as written", `{"jsonrpc":"2.0","id":7,"result":{"action":"accept", "n":1.0}}`, `{"action":"accept", "n":1.0}`, nil},
		{"a case-variant key at any depth", `{"jsonrpc":"2.0","id":7,"result":{"action":"accept","Action":1}}`, "", ErrMalformed},
		{"error", `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}`, "", nil},
		{"extra member", `{"jsonrpc":"2.0","id":7,"result":{},"extra":1}`, "", ErrMalformed},
		{"case-variant result", `{"jsonrpc":"2.0","id":7,"result":{},"Result":{}}`, "", ErrMalformed},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":7,"result":{}}`, "", ErrMalformed},
		{"no id", `{"jsonrpc":"2.0","result":{}}`, "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res, rpcErr, err := DecodeEnvelope([]byte(tc.in))
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if string(res) != tc.result || (err == nil && (rpcErr != nil) == (res != nil)) {
				t.Fatalf("result %s, error %+v", res, rpcErr)
			}
		})
	}
}

func TestChecked(t *testing.T) {
	offered := func(id string) bool { return id == "allow" }
	for _, tc := range []struct {
		in  string
		err error
	}{
		{`{"outcome":{"outcome":"selected","optionId":"allow"}}`, nil},
		{`{"outcome":{"outcome":"cancelled"}}`, nil},
		{`{"outcome":{"outcome":"selected","optionId":"allow_always"}}`, ErrNotOffered},
		{`{"outcome":{"outcome":"selected","optionId":"allow"},"x":1}`, ErrMalformed},
	} {
		r, err := Checked([]byte(tc.in), offered)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Checked(%s) = %+v, %v; want %v", tc.in, r, err, tc.err)
		}
	}
}

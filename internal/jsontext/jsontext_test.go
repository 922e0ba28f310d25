package jsontext

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	deepObj := strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{}`, nil},
		{` {"a":1,"b":[true,false,null,"x",-0.5e+3]} `, nil},
		{`[]`, nil},
		{`"\u00e9\ud83d\ude00"`, nil},
		{deep, nil},
		{deepObj, nil},
		{`{"a":1,"a":2}`, ErrDuplicateKey},
		{`{"optionId":"x","OptionId":"y"}`, ErrDuplicateKey},
		{`{"outcome":1,"\u004futcome":2}`, ErrDuplicateKey},
		{`{"k":1,"` + "\u212a" + `":2}`, ErrDuplicateKey}, // Kelvin sign folds to k
		{`{"a":{"b":1,"b":2}}`, ErrDuplicateKey},
		{`[{"x":1},{"x":1}]`, nil}, // different objects
		{`{"a":1,"b":2,"c":3,"A":4}`, ErrDuplicateKey},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"K3":11}`, ErrDuplicateKey},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"K10":11}`, ErrDuplicateKey},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11}`, nil},
		{`{"aé":1,"AÉ":2}`, ErrDuplicateKey},
		{"\"\xff\"", ErrInvalidUTF8},
		{`"\ud800"`, ErrInvalidUTF8},
		{`"\ud800\u0041"`, ErrInvalidUTF8},
		{`"\udc00\udc00"`, ErrInvalidUTF8},
		{`{"a":1,}`, ErrSyntax},
		{`[1,]`, ErrSyntax},
		{`[1 2]`, ErrSyntax},
		{`{"a" 1}`, ErrSyntax},
		{`01`, ErrSyntax},
		{`1.`, ErrSyntax},
		{`-`, ErrSyntax},
		{`1e`, ErrSyntax},
		{`tru`, ErrSyntax},
		{`"a` + "\n" + `"`, ErrSyntax},
		{`"\x"`, ErrSyntax},
		{`{} {}`, ErrSyntax},
		{``, ErrSyntax},
		{`[`, ErrSyntax},
		{deep[:len(deep)-1], ErrSyntax},
		{`{"a":1]`, ErrSyntax},
		{`[1}`, ErrSyntax},
	} {
		err := Check([]byte(tc.in))
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			name := tc.in
			if len(name) > 40 {
				name = name[:40] + "…"
			}
			t.Errorf("Check(%q) = %v, want %v", name, err, tc.want)
		}
	}
}

func TestDuplicateKeyNamesTheKey(t *testing.T) {
	err := Check([]byte(`{"outcome":{"outcome":"selected","optionId":"a","OptionId":"b"}}`))
	var e *Error
	if !errors.As(err, &e) || e.Key != "OptionId" || !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("err = %#v", err)
	}
}

func TestObjectAndFields(t *testing.T) {
	ms, err := Object([]byte(` { "b" : [1, {"x":2}] , "a\u0041":"v", "c":{} } `))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Key+"="+string(m.Value))
	}
	if want := `b=[1, {"x":2}] aA="v" c={}`; strings.Join(got, " ") != want {
		t.Errorf("members %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := Object([]byte(`[1]`)); !errors.Is(err, ErrType) {
		t.Errorf("Object of an array: %v", err)
	}
	f, err := Fields([]byte(`{"outcome":"selected","optionId":"x"}`), "outcome", "optionId", "_meta")
	if err != nil || string(f["optionId"]) != `"x"` || len(f) != 2 {
		t.Errorf("Fields = %q, %v", f, err)
	}
	_, err = Fields([]byte(`{"outcome":"selected","OptionID":"x"}`), "outcome", "optionId")
	var e *Error
	if !errors.As(err, &e) || e.Key != "OptionID" || !errors.Is(err, ErrUnknownKey) {
		t.Errorf("case-folded key: %v", err)
	}
}

func TestStringAndQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "sess\u0069on/request_permission", "quote\" back\\ ctl\x01 nl\n <>& \u2028 é 😀"} {
		q := Quote(s)
		got, err := String(q)
		if err != nil || got != s {
			t.Errorf("String(Quote(%q)) = %q, %v (quoted %s)", s, got, err, q)
		}
		var std string
		if err := json.Unmarshal(q, &std); err != nil || std != s {
			t.Errorf("encoding/json reads Quote(%q) as %q, %v", s, std, err)
		}
	}
	if strings.Contains(string(Quote("<a&b>")), `\u003c`) {
		t.Error("Quote escapes HTML")
	}
	if got, err := String([]byte(`"session\u002frequest\u005fpermission"`)); err != nil || got != "session/request_permission" {
		t.Errorf("String = %q, %v", got, err)
	}
	if _, err := String([]byte(`1`)); !errors.Is(err, ErrType) {
		t.Errorf("String(1): %v", err)
	}
}

func TestCanonicalID(t *testing.T) {
	same := [][]string{
		{`55`, `55.0`, `5.5e1`, ` 55 `, `550e-1`, `55.000`},
		{`"a"`, `"\u0061"`},
		{`-3`, `-3.0`, `-0.3e1`},
		{`0`, `-0`, `0.0`, `0e10`},
		{`null`},
		{`12345678901234567890`, `1.2345678901234567890e19`},
	}
	seen := map[string]string{}
	for _, group := range same {
		want, err := CanonicalID([]byte(group[0]))
		if err != nil {
			t.Fatalf("CanonicalID(%s): %v", group[0], err)
		}
		if other, dup := seen[want]; dup {
			t.Errorf("%s and %s share canonical %s", group[0], other, want)
		}
		seen[want] = group[0]
		for _, id := range group[1:] {
			if got, err := CanonicalID([]byte(id)); err != nil || got != want {
				t.Errorf("CanonicalID(%s) = %s, %v; want %s like %s", id, got, err, want, group[0])
			}
		}
	}
	if a, _ := CanonicalID([]byte(`"5"`)); a == seen["5"] || a == mustID(t, `5`) {
		t.Error(`"5" and 5 are one id`)
	}
	for _, bad := range []string{`{}`, `[1]`, `true`, `1e999999999`, `"x`, `1` + strings.Repeat("0", 100)} {
		if _, err := CanonicalID([]byte(bad)); err == nil {
			t.Errorf("CanonicalID(%s) succeeded", bad)
		}
	}
}

func mustID(t *testing.T, s string) string {
	t.Helper()
	id, err := CanonicalID([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// FuzzCheck: whatever Check accepts, encoding/json accepts and reads the
// same way as an exact-key parser would (no duplicates in any case), and
// Check never accepts what encoding/json rejects.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"A":2}`, `[1,"\ud800"]`, `{"outcome":{"outcome":"selected","optionId":"x"}}`, `"\u00e9"`, `-1.5e3`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b)
		if err == nil && !json.Valid(b) {
			t.Fatalf("Check accepts what encoding/json rejects: %q", b)
		}
		if err == nil {
			if _, err := Object(b); err != nil && !errors.Is(err, ErrType) {
				t.Fatalf("Object fails on checked input: %v", err)
			}
			return
		}
		if errors.Is(err, ErrSyntax) && json.Valid(b) {
			t.Fatalf("Check says syntax error on valid JSON %q: %v", b, err)
		}
	})
}

func BenchmarkCheckDecision(b *testing.B) {
	in := []byte(`{"outcome":"select","optionId":"allow","reason":"npm test is on the team's list","explanation":{"summary":"Runs the test suite","risk":"none","riskLevel":"low"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(in); err != nil {
			b.Fatal(err)
		}
	}
}

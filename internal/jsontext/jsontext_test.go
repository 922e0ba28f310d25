package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
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
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"K3":11}`, ErrDuplicateKey},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"K10":11}`, ErrDuplicateKey},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11}`, nil},
		{`{"aé":1,"AÉ":2}`, ErrDuplicateKey},
		{`{"optionId":"x","OptionId":"y"}`, ErrDuplicateKey},
		{`{"outcome":1,"\u004futcome":2}`, ErrDuplicateKey},
		{`{"k":1,"` + "\u212a" + `":2}`, ErrDuplicateKey}, // Kelvin sign folds to k
		{`{"a":{"b":1,"b":2}}`, ErrDuplicateKey},
		{`[{"x":1},{"x":1}]`, nil}, // different objects
		{`{"a":1,"b":2,"c":3,"A":4}`, ErrDuplicateKey},
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
		// Syntax accepts everything Check accepts, and rejects what Check
		// finds a syntax error in.
		if serr := Syntax(b); (err == nil && serr != nil) || (errors.Is(err, ErrSyntax) && serr == nil) {
			t.Fatalf("Syntax = %v where Check = %v: %q", serr, err, b)
		}
		if err == nil {
			ms, err := Object(b)
			if err != nil && !errors.Is(err, ErrType) {
				t.Fatalf("Object fails on checked input: %v", err)
			}
			lenient, _ := Members(b)
			if len(lenient) != len(ms) {
				t.Fatalf("Members found %d members, Object %d", len(lenient), len(ms))
			}
			var std map[string]json.RawMessage
			if err == nil && json.Unmarshal(b, &std) == nil {
				for _, m := range ms {
					if v, ok := std[m.Key]; !ok || !bytes.Equal(v, m.Value) || !bytes.Equal(b[m.Offset:m.Offset+len(m.Value)], m.Value) {
						t.Fatalf("member %q reads %s, encoding/json %s", m.Key, m.Value, v)
					}
				}
			}
			return
		}
		if errors.Is(err, ErrSyntax) && json.Valid(b) {
			t.Fatalf("Check says syntax error on valid JSON %q: %v", b, err)
		}
	})
}

func TestSyntaxIsLenientOnlyWhereCheckIsStrict(t *testing.T) {
	for _, tc := range []struct {
		in     string
		syntax error
		check  error
	}{
		{`{"a":1,"a":2}`, nil, ErrDuplicateKey},
		{`{"a":{"k":1,"K":2}}`, nil, ErrDuplicateKey},
		{"\"\xff\"", nil, ErrInvalidUTF8},
		{`"\ud800"`, nil, ErrInvalidUTF8},
		{`{"a":1,}`, ErrSyntax, ErrSyntax},
		{`"\x"`, ErrSyntax, ErrSyntax},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), nil, nil}, // past encoding/json's depth
	} {
		if err := Syntax([]byte(tc.in)); !errors.Is(err, tc.syntax) || (tc.syntax == nil) != (err == nil) {
			t.Errorf("Syntax(%.40q) = %v, want %v", tc.in, err, tc.syntax)
		}
		if err := Check([]byte(tc.in)); !errors.Is(err, tc.check) || (tc.check == nil) != (err == nil) {
			t.Errorf("Check(%.40q) = %v, want %v", tc.in, err, tc.check)
		}
	}
}

func TestMembersElementsAndOffsets(t *testing.T) {
	b := []byte(` {"id":5,"id":6,"ke\u0079":"\ud800x","o":{"a":[1,2]}} `)
	ms, err := Members(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		if string(b[m.Offset:m.Offset+len(m.Value)]) != string(m.Value) {
			t.Errorf("member %q: offset %d does not point at its value", m.Key, m.Offset)
		}
		got = append(got, m.Key+"="+string(m.Value))
	}
	if want := `id=5 id=6 key="\ud800x" o={"a":[1,2]}`; strings.Join(got, " ") != want {
		t.Errorf("Members = %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := Object(b); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("Object of the same text: %v", err)
	}
	es, err := Elements([]byte(`[ {"a":1,"a":2} , 3,"x",[[]] ]`))
	if err != nil || len(es) != 4 || string(es[0]) != `{"a":1,"a":2}` || string(es[3]) != `[[]]` {
		t.Errorf("Elements = %q, %v", es, err)
	}
	if _, err := Elements([]byte(`{}`)); !errors.Is(err, ErrType) {
		t.Errorf("Elements of an object: %v", err)
	}
	if es, err := Elements([]byte(`[]`)); err != nil || len(es) != 0 {
		t.Errorf("Elements([]) = %q, %v", es, err)
	}
}

func TestLookup(t *testing.T) {
	f, err := Lookup([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","futureField":true}`), "id", "method", "params")
	if err != nil || string(f["id"]) != `1` || string(f["method"]) != `"m"` || len(f) != 2 {
		t.Errorf("Lookup = %q, %v", f, err)
	}
	for _, in := range []string{`{"Method":"m"}`, `{"ID":1}`, `{"` + "\u212a" + `ey":1}`} {
		_, err := Lookup([]byte(in), "method", "id", "key")
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrUnknownKey) {
			t.Errorf("Lookup(%s) = %v, want ErrUnknownKey", in, err)
		}
	}
	if _, err := Lookup([]byte(`{"id":1,"Id":2}`), "id"); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("duplicate: %v", err)
	}
}

func TestPrefixMembers(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"x":[}`: `jsonrpc="2.0" id=7 method="session/request_permission"`,
		`{"id":"a","id":"b"}`: `id="a" id="b"`,
		`{"id":5`:             `id=5`,
		`not json`:            ``,
		`{"id"`:               ``,
	} {
		var got []string
		for _, m := range PrefixMembers([]byte(in)) {
			got = append(got, m.Key+"="+string(m.Value))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("PrefixMembers(%s) = %q, want %q", in, strings.Join(got, " "), want)
		}
	}
}

func TestSkim(t *testing.T) {
	type member struct{ key, value string }
	cases := []struct {
		in   string
		want []member // nil: not skimmed
	}{
		{` { "a" : [1,{"b":"}"}] , "b":"x\"y" ,"c":{"d":1}, "e": -1.5e+3, "f":null} ` + "\r\n",
			[]member{{"a", `[1,{"b":"}"}]`}, {"b", `"x\"y"`}, {"c", `{"d":1}`}, {"e", `-1.5e+3`}, {"f", "null"}}},
		{`{}`, []member{}},
		{`{"k\u0041":1}`, []member{{`k\u0041`, "1"}}}, // keys as written
		{`{"a":[}]}`, nil},                            // brackets of the wrong kind
		{`{"a":{]}`, nil},
		{`{"a":1}{"b":2}`, nil}, // two values
		{`{"a":1} x`, nil},
		{`{"a":'x'}`, nil}, // quotes of another kind
		{`{"a":1 /* c */}`, nil},
		{`{"a":[1,/*"b"*/2]}`, nil},
		{`{"a":"open}`, nil},
		{`{"a":1,}`, nil},
		{`{a:1}`, nil},
		{`[1]`, nil},
		{`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, []member{{"a", strings.Repeat("[", 64) + strings.Repeat("]", 64)}}},
		{`{"a":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, nil},
		{``, nil},
	}
	for _, c := range cases {
		var got []member
		_, ok := Skim([]byte(c.in), func(k, v []byte) bool {
			got = append(got, member{string(k), string(v)})
			return true
		})
		if ok != (c.want != nil) || ok && !slices.Equal(got, c.want) {
			t.Errorf("Skim(%s) = %v %q, want %q", c.in, ok, got, c.want)
		}
	}
	n := 0
	if _, ok := Skim([]byte(`{"a":1,"b":2,"c":3}`), func(k, v []byte) bool { n++; return string(k) != "b" }); ok || n != 2 {
		t.Errorf("Skim went on after f refused a member (%d calls) or reported success", n)
	}
}

func TestSkimMemo(t *testing.T) {
	text := strings.Repeat("t", 80)
	obj := func(s string) []byte { return []byte(`{"k":"` + text + `","v":{"a":"` + s + `","b":1}}`) }
	nested, ok := Skim(obj(text), func(k, v []byte) bool { return true })
	if !ok || string(obj(text)[nested.From:nested.To]) != text || nested.From < 20 {
		t.Fatalf("Skim = %v %+v: the longest nested string is not the one below the top level", ok, nested)
	}
	var m SkimMemo
	if _, ok := m.Contents(obj(text)); ok {
		t.Fatal("the zero memo matched")
	}
	m.Set(obj(text), nested)
	for s, want := range map[string]bool{
		text: true, "": true, `x\"y`: true, `\\`: true,
		`x"y`: false, `x\`: false, `\\\`: false, `","b":{"c":"`: false,
	} {
		if got, ok := m.Contents(obj(s)); ok != want || ok && string(got) != s {
			t.Errorf("Contents with contents %q = %q %v, want %v", s, got, ok, want)
		}
	}
	if _, ok := m.Contents([]byte(`{"k":"` + text + `","v":{"a":"x","b":2}}`)); ok {
		t.Error("matched a text that differs outside the string")
	}
	m.Set(obj(text), Span{nested.From, nested.From + 3})
	if _, ok := m.Contents(obj(text)); ok {
		t.Error("a short string was remembered")
	}
}

func TestMentions(t *testing.T) {
	const w = "request_permission"
	for in, want := range map[string]bool{
		`{"method":"session/request_permission"}`:                 true,
		`{"method":"session/request\u005fpermission"`:             true,
		`{"method":"session\/\u0072equest\u005Fpermission"}`:      true,
		`x \u0072\u0065\u0071\u0075\u0065\u0073\u0074_permission`: true,
		`{"method":"session/request_permissio"}`:                  false,
		`{"method":"session/request\_permission"}`:                false, // not an escape
		`request\u005`: false,
		``:             false,
	} {
		if got := Mentions([]byte(in), w); got != want {
			t.Errorf("Mentions(%s) = %v, want %v", in, got, want)
		}
	}
	for in, want := range map[string]bool{`{"OUTCOME":1}`: true, `{"\u004Futcome":1}`: true, `{"outcom":1}`: false} {
		if got := MentionsFold([]byte(in), "outcome"); got != want {
			t.Errorf("MentionsFold(%s) = %v, want %v", in, got, want)
		}
	}
	long := strings.Repeat(`\u0061`, 1000) + `request\u005fpermission`
	if !Mentions([]byte(long), w) {
		t.Error("missed a mention after a long escaped run")
	}
}

func TestAppendCompact(t *testing.T) {
	deep := strings.Repeat("[ ", 20000) + strings.Repeat("] ", 20000)
	for in, want := range map[string]string{
		" { \"a\" :\n [1, \"b c\\\" d\"] }\t": `{"a":[1,"b c\" d"]}`,
		`"  "`:                                `"  "`,
		deep:                                  strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	} {
		if got := string(AppendCompact([]byte("x"), []byte(in))); got != "x"+want {
			t.Errorf("AppendCompact(%.30q) = %.40q, want %.40q", in, got, "x"+want)
		}
	}
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

// FuzzFoldEqual: FoldEqual is Fold's equality, without the strings.
func FuzzFoldEqual(f *testing.F) {
	for _, s := range [][2]string{{"id", "ID"}, {"id", "iD"}, {"k", "\u212a"}, {"s", "\u017f"}, {"outcome", "OUTCOME"}, {"a", "ab"}, {"\xff", "\ufffd"}, {"", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := FoldEqual(a, b), Fold(a) == Fold(b); got != want {
			t.Fatalf("FoldEqual(%q, %q) = %v, Fold equality %v", a, b, got, want)
		}
	})
}

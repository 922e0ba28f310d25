package leader

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The worker reads a leader's answer strictly: a key spelled twice (in any
// case) or in another case is never used, whichever spelling would win in
// some parser; the worker falls back instead.
func TestClientRefusesAmbiguousAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		want         error
	}{
		{"plain", `"outcome":"selected","optionId":"allow"`, nil},
		{"case-folded duplicate optionId", `"outcome":"selected","optionId":"allow","OptionId":"allow_always"`, ErrGone},
		{"case-folded duplicate outcome", `"outcome":"selected","optionId":"allow","Outcome":"cancelled"`, ErrGone},
		{"exact duplicate", `"outcome":"selected","optionId":"reject","optionId":"allow"`, ErrGone},
		{"case-folded key alone", `"outcome":"selected","OptionID":"allow"`, ErrGone},
		{"escaped duplicate", `"outcome":"selected","optionId":"allow","\u006fptionId":"allow_always"`, ErrGone},
		{"selected without option", `"outcome":"selected"`, ErrNotOffered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := socketPath(t)
			stop := rawLeader(t, path, func(id string) string {
				return `{"v":1,"type":"answer","id":"` + id + `",` + tc.fields + `,"decidedBy":"person"}`
			})
			defer stop()
			c, _ := NewClient(path)
			q := question("x")
			q.Shown = []string{"allow", "reject"}
			a, err := c.Ask(context.Background(), q)
			if tc.want == nil {
				if err != nil || a.OptionID != "allow" {
					t.Fatalf("Ask = %+v, %v; want allow", a, err)
				}
				return
			}
			if !errors.Is(err, tc.want) || a.OptionID != "" {
				t.Fatalf("Ask = %+v, %v; want %v", a, err, tc.want)
			}
			if tc.want == ErrGone && !strings.Contains(err.Error(), "one way only") && !strings.Contains(err.Error(), "duplicate") {
				t.Fatalf("error does not say why: %v", err)
			}
		})
	}
}

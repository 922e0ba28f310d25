package builtin_test

import (
	"fmt"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/builtin"
)

var (
	claude = []abi.Option{
		{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
	}
	codex = []abi.Option{
		{OptionID: "approved", Name: "Yes, proceed", Kind: abi.OptionAllowOnce},
		{OptionID: "approved-execpolicy-amendment", Name: "Yes, and don't ask again", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "abort", Name: "No", Kind: abi.OptionRejectOnce},
	}
	exitPlan = []abi.Option{
		{OptionID: "acceptEdits", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "default", Kind: abi.OptionAllowOnce, Durable: true},
		{OptionID: "plan", Kind: abi.OptionRejectOnce, Durable: true},
	}
	onlyDurable = []abi.Option{
		{OptionID: "always", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "never", Kind: abi.OptionRejectAlways, Durable: true},
	}
	// An allow_once option that carries changes is durable and must go.
	describedOnce = []abi.Option{
		{OptionID: "allow-with-updates", Kind: abi.OptionAllowOnce, Durable: true},
		{OptionID: "allow-once", Kind: abi.OptionAllowOnce},
		{OptionID: "deny", Kind: abi.OptionRejectOnce},
	}
	// Changes that failed validation may change anything; the agent lists
	// them first.
	mayChangeAnything = []abi.Option{
		{OptionID: "allow-and-more", Kind: abi.OptionAllowOnce, Durable: true, Changes: &abi.ChangeSet{Known: false}},
		{OptionID: "deny-and-more", Kind: abi.OptionRejectOnce, Durable: true, Changes: &abi.ChangeSet{Known: false}},
		{OptionID: "allow-once", Kind: abi.OptionAllowOnce},
		{OptionID: "deny", Kind: abi.OptionRejectOnce},
	}
)

func ids(opts []abi.Option) []string {
	var out []string
	for _, o := range opts {
		out = append(out, o.OptionID)
	}
	return out
}

func TestPersonOptions(t *testing.T) {
	tests := []struct {
		name    string
		options []abi.Option
		want    []string
	}{
		{"claude keeps allow and reject in order", claude, []string{"allow", "reject"}},
		{"codex drops the execpolicy amendment", codex, []string{"approved", "abort"}},
		{"switch_mode offers nothing", exitPlan, nil},
		{"only durable offers nothing", onlyDurable, nil},
		{"an option that may change anything is dropped", mayChangeAnything, []string{"allow-once", "deny"}},
		{"allow_once with changes is dropped", describedOnce, []string{"allow-once", "deny"}},
		{"no options", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(builtin.PersonOptions(tt.options))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("PersonOptions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHeadlessNeverAllows(t *testing.T) {
	tests := []struct {
		name    string
		options []abi.Option
		want    builtin.Answer
	}{
		{"claude", claude, builtin.Answer{OptionID: "reject"}},
		{"codex", codex, builtin.Answer{OptionID: "abort"}},
		{"exit plan mode keeps planning", exitPlan, builtin.Answer{OptionID: "plan"}},
		{"reject_always is not chosen", onlyDurable, builtin.Answer{Cancelled: true}},
		{"nothing offered", nil, builtin.Answer{Cancelled: true}},
		{"a plain reject before one that may change anything", mayChangeAnything, builtin.Answer{OptionID: "deny"}},
		{"a reject that may change anything is never chosen", mayChangeAnything[:2], builtin.Answer{Cancelled: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := builtin.Headless(tt.options)
			if got != tt.want {
				t.Fatalf("Headless = %+v, want %+v", got, tt.want)
			}
			for _, o := range tt.options {
				if o.OptionID == got.OptionID && o.Kind != abi.OptionRejectOnce {
					t.Fatalf("Headless chose %s of kind %s", o.OptionID, o.Kind)
				}
			}
		})
	}
}

func ExampleHeadless() {
	answer := builtin.Headless([]abi.Option{
		{OptionID: "allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Kind: abi.OptionRejectOnce},
	})
	fmt.Println(answer.OptionID, answer.Cancelled)
	// Output: reject false
}

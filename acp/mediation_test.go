package acp

import (
	"fmt"
	"testing"
)

// The request and session state machines (mediation.go) allow exactly
// the transitions docs/mediation.md draws: every other one is refused
// and leaves the state as it was, so a late or repeated event (a second
// answer, a cancel after the answer, a hold of a refused session) cannot
// move a request or a session anywhere.
func TestMediationTransitions(t *testing.T) {
	perms := []permState{stateHeld, stateAsked, stateWithdrawn, stateAnswered, stateDone}
	allowedPerm := map[string]bool{
		"held>asked": true, "held>withdrawn": true, "held>done": true,
		"asked>answered": true, "asked>withdrawn": true, "asked>done": true,
		"withdrawn>done": true,
		"answered>done":  true,
	}
	for _, from := range perms {
		for _, to := range perms {
			k := fmt.Sprintf("%v>%v", from, to)
			pp := &permission{state: from}
			moved := pp.moveLocked(to)
			if moved != allowedPerm[k] {
				t.Errorf("request %s: moved %v, want %v", k, moved, allowedPerm[k])
			}
			if !moved && pp.state != from {
				t.Errorf("request %s refused but the state is now %v", k, pp.state)
			}
		}
	}

	sessions := []sessionState{sessionNew, sessionSwitching, sessionGoverned, sessionRefused}
	allowedSession := map[string]bool{
		"new>switching":       true,
		"switching>switching": true, "switching>governed": true, "switching>refused": true,
		"governed>switching": true,
	}
	for _, from := range sessions {
		for _, to := range sessions {
			k := fmt.Sprintf("%v>%v", from, to)
			g := newGates(0)
			// Bring session s-1 to from through the table's own moves, its
			// start recorded as holdStart does.
			if from != sessionNew {
				g.moveLocked("s-1", sessionSwitching)
				g.started["s-1"] = struct{}{}
			}
			if from == sessionGoverned || from == sessionRefused {
				g.moveLocked("s-1", from)
			}
			if got := g.stateLocked("s-1"); got != from {
				t.Fatalf("%s: the session is %v", k, got)
			}
			_, moved := g.moveLocked("s-1", to)
			if moved != allowedSession[k] {
				t.Errorf("session %s: moved %v, want %v", k, moved, allowedSession[k])
			}
			want := from
			if moved {
				want = to
			}
			if got := g.stateLocked("s-1"); got != want {
				t.Errorf("session %s (moved %v): the session is %v", k, moved, got)
			}
		}
	}
}

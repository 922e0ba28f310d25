package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/internal/safetext"
)

// This file takes a person's answer from the page and hands it to the
// leader's one answer path (leader.Server.Answer): the page names an
// option by its index among the options shown, so it cannot name one that
// was not offered; the first answer wins and a later one is told who won.

// maxSaidRunes bounds what the person may type for the model.
const maxSaidRunes = 1000

type answerBody struct {
	Seq    uint64 `json:"seq"`
	Option int    `json:"option"`
	Said   string `json:"said"`
}

// Errors of decodeAnswer.
var errBadAnswer = errors.New("web: bad answer")

// decodeAnswer reads the body strictly: one object, known keys only.
func decodeAnswer(r io.Reader) (answerBody, error) {
	var a answerBody
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("%w: %v", errBadAnswer, err)
	}
	if dec.More() {
		return a, fmt.Errorf("%w: more than one value", errBadAnswer)
	}
	if !utf8.ValidString(a.Said) || utf8.RuneCountInString(a.Said) > maxSaidRunes {
		return a, fmt.Errorf("%w: the reason must be UTF-8 of at most %d characters", errBadAnswer, maxSaidRunes)
	}
	return a, nil
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, sess *session) {
	a, err := decodeAnswer(r.Body)
	if err != nil {
		reply(w, http.StatusBadRequest, err.Error())
		return
	}
	var optionID string
	found := false
	for _, p := range s.opts.Leader.Queued() {
		if p.Seq == a.Seq && p.Ready {
			if a.Option < 0 || a.Option >= len(p.Options) {
				reply(w, http.StatusBadRequest, "no such option")
				return
			}
			optionID, found = p.Options[a.Option].OptionID, true
		}
	}
	if found {
		err = s.opts.Leader.Answer(a.Seq, optionID, sess.name, a.Said)
	}
	switch {
	case !found || errors.Is(err, leader.ErrNotPending):
		reply(w, http.StatusConflict, s.answeredBy(a.Seq))
	case err != nil:
		reply(w, http.StatusBadRequest, err.Error())
	default:
		s.log.Info("web: answered", "seq", a.Seq, "option", optionID, "by", sess.name)
		reply(w, http.StatusOK, "")
	}
}

// answeredBy says who answered seq first, as far as the page knows.
func (s *Server) answeredBy(seq uint64) string {
	done, _ := s.resolved.since(0)
	for i := len(done) - 1; i >= 0; i-- {
		if rec := done[i].rec; rec.Seq == seq {
			verb, by := who(rec)
			return fmt.Sprintf("already %s %s at %s", verb, safetext.Terminal(by), rec.Ended.Local().Format("15:04:05"))
		}
	}
	return "this request is no longer pending"
}

func reply(w http.ResponseWriter, code int, msg string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if msg == "" {
		enc.Encode(map[string]bool{"ok": true})
	} else {
		enc.Encode(map[string]string{"error": msg})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

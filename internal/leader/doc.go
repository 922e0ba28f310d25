// Package leader lets several permhost workers put the permission requests
// their own plugins could not decide to one person: a leader process listens
// on a Unix socket, runs its own plugins first, and shows what is left at
// its terminal one request at a time, in arrival order.
//
// The wire format (one versioned JSON object per line, at most
// [MaxMessageBytes] each) is documented in docs/leader-protocol.md. The
// socket is created 0600 in a directory only its owner can enter, and every
// connection's peer credentials are checked: the leader answers only its
// own user.
//
// [Server.Answer] answers any ready request from elsewhere (the web page of
// internal/web), in any order; the first answer wins over the terminal's
// prompt, which is retracted, and over any later answer ([ErrNotPending]).
//
// A worker asks with [Client.Ask]; cancelling its context withdraws the
// request, and any failure (no leader, a refusal, a leader that exits)
// comes back as an error so that the worker falls back to its own headless
// policy. A failure never becomes an allow, and an answer never names an
// option the request did not offer.
package leader

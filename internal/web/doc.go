// Package web is the leader's web approver (`permhost leader --web ADDR`):
// a page that lists, live, every request the leader's workers put to a
// person, and answers them through the leader's one answer path
// (leader.Server.Answer, which the worker checks again against the options
// it offered). The first answer wins, wherever it was given; the other
// pages show who answered and when.
//
// One job per file: server.go routes and bounds requests, auth.go is the
// login link, the session cookie and the CSRF token, limit.go rate
// limits, pending.go renders the pending requests, events.go streams them
// (server-sent events), answer.go takes an answer, resolved.go remembers
// how requests ended, history.go and chart.go show the decision log,
// grants.go lists and revokes grants, webhook.go pushes a notice.
//
// Everything a peer wrote (titles, commands, plugin explanations, names)
// is rendered with safetext.HTML. The page's assets are embedded; nothing
// is fetched at run time.
package web

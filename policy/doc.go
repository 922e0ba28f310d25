// Package policy is the decision pipeline between the ACP proxy (or the
// headless client) and the plugin chain: it turns a session/request_permission
// plus what the proxy knows of its session into an [abi.Request], runs the
// chain, and turns the verdict back into an ACP answer — to the agent
// directly, or to the person with the plugins' explanations — and writes one
// decision-log line per decision.
//
// It is the only package where acp, host and builtin meet below the CLI, so
// that cmd/permhost stays wiring and flags.
//
// The [Engine] loads each configured plugin in the background into a slot
// that stands in the chain ([host.Loading]): a decision never waits for
// every plugin, only for one still loading within its load_wait, and a
// plugin that failed to load is retried in the background. Each chain is a
// generation that decisions hold while they run; a bundle reload installs a
// new one and the plugins it replaced are closed once the last decision on
// the old one ends. A panic on a decision's path becomes the builtin
// fallback's answer, never the end of the process.
//
// The editor's answer to a permission request is read once, strictly, by
// readAnswer, and every decision reaches the agent through one function of
// mediate.go (deliver for permission requests, the proxy's and permhost
// run's alike; deliverApproval; fsDelivery; and the mode actions of
// [session] modes = "govern": deliverSwitch, deliverReverse,
// deliverModeRefusal), which logs what the peer gets read back from the
// bytes it is sent (for a permission request, the line the proxy hands
// back through acp.Client.Deliver). docs/mediation.md has the states and
// who owns what.
//
// Only packages abi and plugins/pdk carry a compatibility promise; this
// package's API may change between releases.
package policy

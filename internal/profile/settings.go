package profile

// Settings is what an agent's own configuration decides beside its modes.
// Some agents report an asking mode while their settings allow calls by
// themselves (OpenCode's permission rules allow most tools by default; Kimi
// Code starts every session in the mode its default_permission_mode names
// while the mode option reads "default"): permhost cannot see or change
// those settings, so a governed session of such an agent is governed only
// as far as the settings make it ask. permhost check names the setting;
// [session] unasked says what permhost does when a call runs unasked.
type Settings struct {
	// Decides says what the agent decides by itself and by which setting.
	Decides string
	// Asks is the exact setting that makes the agent ask, as a person
	// writes it, with the file it goes in.
	Asks string
}

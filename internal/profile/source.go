package profile

import (
	"fmt"
	"strconv"
)

// From says what part of a tool call a [Source] reads.
type From int

// The parts of a tool call a Source can read.
const (
	// FromRawInput is rawInput[Key]: a string, or every string of an array.
	FromRawInput From = iota + 1
	// FromTitle is the title, whole.
	FromTitle
	// FromTitleURLs is every URL written in the title.
	FromTitleURLs
	// FromContentText is, in each text content block, what lies between
	// Prefix and the next Suffix.
	FromContentText
	// FromLocations is every locations[].path.
	FromLocations
	// FromDiffs is the path of every content item of type "diff".
	FromDiffs
	// FromChanges is every key of the object rawInput[Key], and the
	// move_path of its value (codex-acp's patch changes).
	FromChanges
	// FromMeta is the string at the dotted path Key of the tool call's
	// _meta.
	FromMeta
	// FromField is the tool call's own member Key, one ACP does not define
	// (claude-agent-acp 0.101's "name").
	FromField
	// FromIDPrefix is the toolCallId up to the separator Key (Gemini CLI's
	// "run_shell_command__run_shell_command_1796111364791_0").
	FromIDPrefix
	// FromRawInputJSON is member Key of the JSON object a rawInput string
	// holds (Mistral Vibe sends rawInput as the arguments' JSON text).
	FromRawInputJSON
	// FromContentJSON is member Key of the JSON object a text content
	// block holds (kimi-cli shows a tool call's arguments only so).
	FromContentJSON
	// FromTitleBefore is the title up to the separator Key (kimi-cli's
	// "Shell: rm -rf build" names its tool so).
	FromTitleBefore
)

// Source is one place a fact may be found.
type Source struct {
	From From
	// Key is the rawInput key, the _meta path, the member or the id
	// separator.
	Key string
	// Prefix and Suffix delimit a value inside text (FromContentText).
	Prefix, Suffix string
	// ToEnd makes the value run from Prefix to the text's end, which must
	// be Suffix: a command quoted in backticks may hold backticks itself.
	ToEnd bool
}

func rawInput(key string) Source   { return Source{From: FromRawInput, Key: key} }
func title() Source                { return Source{From: FromTitle} }
func titleURLs() Source            { return Source{From: FromTitleURLs} }
func locations() Source            { return Source{From: FromLocations} }
func diffs() Source                { return Source{From: FromDiffs} }
func changes(key string) Source    { return Source{From: FromChanges, Key: key} }
func meta(path string) Source      { return Source{From: FromMeta, Key: path} }
func field(key string) Source      { return Source{From: FromField, Key: key} }
func idPrefix(sep string) Source   { return Source{From: FromIDPrefix, Key: sep} }
func between(p, s string) Source   { return Source{From: FromContentText, Prefix: p, Suffix: s} }
func sources(s ...Source) []Source { return s }
func rawInputJSON(key string) Source {
	return Source{From: FromRawInputJSON, Key: key}
}
func contentJSON(key string) Source { return Source{From: FromContentJSON, Key: key} }
func titleBefore(sep string) Source { return Source{From: FromTitleBefore, Key: sep} }
func betweenToEnd(p, s string) Source {
	return Source{From: FromContentText, Prefix: p, Suffix: s, ToEnd: true}
}

// String says where the source reads, as docs/agents.md writes it.
func (s Source) String() string {
	switch s.From {
	case FromRawInput:
		return "rawInput." + s.Key
	case FromTitle:
		return "title"
	case FromTitleURLs:
		return "URLs in the title"
	case FromContentText:
		if s.ToEnd {
			return "content text after " + strconv.Quote(s.Prefix) + " to a final " + strconv.Quote(s.Suffix)
		}
		return "content text between " + strconv.Quote(s.Prefix) + " and " + strconv.Quote(s.Suffix)
	case FromRawInputJSON:
		return "rawInput (JSON text)." + s.Key
	case FromTitleBefore:
		return "title before " + strconv.Quote(s.Key)
	case FromContentJSON:
		return "content text (JSON)." + s.Key
	case FromLocations:
		return "locations"
	case FromDiffs:
		return "diff paths"
	case FromChanges:
		return "keys of rawInput." + s.Key
	case FromMeta:
		return "_meta." + s.Key
	case FromField:
		return "toolCall." + s.Key
	case FromIDPrefix:
		return "toolCallId before " + strconv.Quote(s.Key)
	}
	return fmt.Sprintf("source(%d)", int(s.From))
}

// pathSource is the abi.Path source a Source's paths are reported with.
func (s Source) pathSource() string {
	switch s.From {
	case FromLocations:
		return "location"
	case FromDiffs:
		return "diff"
	}
	return "rawInput"
}

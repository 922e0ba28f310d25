package host

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/permhost/permhost/abi"
)

// Encoding the request was most of the host's own cost per warm decision:
// encoding/json walks abi.Request by reflection (and, through abi's
// MarshalJSON methods, a second time). appendRequest writes the same bytes
// by hand: exactly what json.Encoder with SetEscapeHTML(false) gives for
// the abi.Request, without its newline. Tests compare the two on a table,
// on a request with every field set (found by reflection, so that a field
// added to abi and not here fails), and by fuzzing.
//
// The RawMessage fields are compacted as json.Compact does, which is what
// encoding/json does with a Marshaler's output when HTML is not escaped
// (compact.go): invalid JSON there is an error, as it is for encoding/json.

// appendRequest appends req's JSON to dst.
func appendRequest(dst []byte, req *abi.Request) ([]byte, error) {
	var err error
	dst = append(dst, `{"abi":{"major":`...)
	dst = strconv.AppendInt(dst, int64(req.ABI.Major), 10)
	dst = append(dst, `,"minor":`...)
	dst = strconv.AppendInt(dst, int64(req.ABI.Minor), 10)
	dst = append(dst, `},"decisionId":`...)
	dst = appendString(dst, req.DecisionID)
	dst = appendSession(append(dst, `,"session":`...), &req.Session)
	if dst, err = appendToolCall(append(dst, `,"toolCall":`...), &req.ToolCall); err != nil {
		return dst, err
	}
	if a := req.Action; a != nil {
		dst = append(dst, `,"action":{"family":`...)
		dst = appendString(dst, a.Family)
		dst = appendStringOmit(dst, `,"command":`, a.Command)
		dst = appendStringOmit(dst, `,"cwd":`, a.Cwd)
		dst = appendStringsOmit(dst, `,"paths":`, a.Paths)
		dst = appendStringsOmit(dst, `,"urls":`, a.URLs)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"options":[`...)
	for i := range req.Options {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendOption(dst, &req.Options[i])
	}
	dst = append(dst, ']')
	dst = appendStringOmit(dst, `,"title":`, req.Title)
	dst = appendStringOmit(dst, `,"description":`, req.Description)
	if s := req.Subject; s != nil {
		dst = append(dst, `,"subject":{"type":`...)
		dst = append(appendString(dst, s.Type), '}')
	}
	if s := req.Shell; s != nil {
		dst = appendShell(append(dst, `,"shell":`...), s)
	}
	if len(req.Paths) > 0 {
		dst = append(dst, `,"paths":[`...)
		for i := range req.Paths {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPath(dst, &req.Paths[i])
		}
		dst = append(dst, ']')
	}
	if dst, err = appendRawOmit(dst, `,"raw":`, req.Raw); err != nil {
		return dst, err
	}
	if dst, err = appendRawOmit(dst, `,"config":`, req.Config); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func appendSession(dst []byte, s *abi.Session) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, s.ID)
	dst = appendStringOmit(dst, `,"cwd":`, s.Cwd)
	dst = appendStringOmit(dst, `,"mode":`, s.Mode)
	dst = appendStringOmit(dst, `,"home":`, s.Home)
	if s.Agent != nil {
		dst = appendPeer(append(dst, `,"agent":`...), s.Agent)
	}
	if s.Client != nil {
		dst = appendPeer(append(dst, `,"client":`...), s.Client)
	}
	return append(dst, '}')
}

func appendPeer(dst []byte, p *abi.Peer) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, p.Name)
	dst = appendStringOmit(dst, `,"title":`, p.Title)
	dst = appendStringOmit(dst, `,"version":`, p.Version)
	dst = appendStringOmit(dst, `,"profile":`, p.Profile)
	return append(dst, '}')
}

func appendToolCall(dst []byte, t *abi.ToolCall) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, t.ID)
	dst = appendStringOmit(dst, `,"title":`, t.Title)
	dst = appendStringOmit(dst, `,"kind":`, t.Kind)
	dst = appendStringOmit(dst, `,"status":`, t.Status)
	if dst, err = appendRawOmit(dst, `,"rawInput":`, t.RawInput); err != nil {
		return dst, err
	}
	if dst, err = appendRawOmit(dst, `,"content":`, t.Content); err != nil {
		return dst, err
	}
	if len(t.Locations) > 0 {
		dst = append(dst, `,"locations":[`...)
		for i, l := range t.Locations {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"path":`...)
			dst = appendString(dst, l.Path)
			dst = appendIntOmit(dst, `,"line":`, l.Line)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendStringOmit(dst, `,"toolName":`, t.ToolName)
	dst = appendStringOmit(dst, `,"parentToolCallId":`, t.ParentToolCallID)
	return append(dst, '}'), nil
}

func appendOption(dst []byte, o *abi.Option) []byte {
	dst = append(dst, `{"optionId":`...)
	dst = appendString(dst, o.OptionID)
	dst = appendString(append(dst, `,"name":`...), o.Name)
	dst = appendString(append(dst, `,"kind":`...), o.Kind)
	dst = appendBool(append(dst, `,"durable":`...), o.Durable)
	if c := o.Changes; c != nil {
		dst = append(dst, `,"changes":{"known":`...)
		dst = appendBool(dst, c.Known)
		dst = appendStringOmit(dst, `,"source":`, c.Source)
		dst = appendStringOmit(dst, `,"invalid":`, c.Invalid)
		if len(c.Items) > 0 {
			dst = append(dst, `,"items":[`...)
			for i := range c.Items {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendChange(dst, &c.Items[i])
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	if g := o.Grants; g != nil {
		dst = append(dst, `,"grants":{"scope":`...)
		dst = appendString(dst, g.Scope)
		dst = appendStringOmit(dst, `,"rule":`, g.Rule)
		dst = appendStringOmit(dst, `,"mode":`, g.Mode)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendChange(dst []byte, c *abi.Change) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, c.Type)
	dst = appendStringOmit(dst, `,"description":`, c.Description)
	dst = appendStringOmit(dst, `,"behavior":`, c.Behavior)
	if len(c.Rules) > 0 {
		dst = append(dst, `,"rules":[`...)
		for i, r := range c.Rules {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"toolName":`...)
			dst = appendString(dst, r.ToolName)
			dst = appendStringOmit(dst, `,"ruleContent":`, r.RuleContent)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendStringOmit(dst, `,"mode":`, c.Mode)
	dst = appendStringsOmit(dst, `,"directories":`, c.Directories)
	dst = appendStringOmit(dst, `,"destination":`, c.Destination)
	dst = appendStringOmit(dst, `,"operation":`, c.Operation)
	dst = appendStringOmit(dst, `,"lifetime":`, c.Lifetime)
	if len(c.Targets) > 0 {
		dst = append(dst, `,"targets":[`...)
		for i := range c.Targets {
			if i > 0 {
				dst = append(dst, ',')
			}
			t := &c.Targets[i]
			dst = append(dst, `{"type":`...)
			dst = appendString(dst, t.Type)
			dst = appendStringOmit(dst, `,"toolName":`, t.ToolName)
			dst = appendStringOmit(dst, `,"matcher":`, t.Matcher)
			dst = appendStringOmit(dst, `,"provider":`, t.Provider)
			dst = appendStringOmit(dst, `,"value":`, t.Value)
			dst = appendStringOmit(dst, `,"protocol":`, t.Protocol)
			dst = appendStringsOmit(dst, `,"argv":`, t.Argv)
			dst = appendStringsOmit(dst, `,"access":`, t.Access)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendShell writes a nil Commands, and a command's nil Argv, as [], as
// abi's MarshalJSON methods do.
func appendShell(dst []byte, s *abi.Shell) []byte {
	dst = append(dst, `{"source":`...)
	dst = appendString(dst, s.Source)
	dst = appendBool(append(dst, `,"parsed":`...), s.Parsed)
	dst = appendStringOmit(dst, `,"reason":`, s.Reason)
	dst = append(dst, `,"commands":[`...)
	for i := range s.Commands {
		if i > 0 {
			dst = append(dst, ',')
		}
		c := &s.Commands[i]
		dst = appendStrings(append(dst, `{"argv":`...), c.Argv)
		dst = appendStringsOmit(dst, `,"wrappers":`, c.Wrappers)
		if len(c.Assignments) > 0 {
			dst = append(dst, `,"assignments":[`...)
			for j, a := range c.Assignments {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendString(append(dst, `{"name":`...), a.Name)
				dst = appendString(append(dst, `,"value":`...), a.Value)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		if len(c.Redirects) > 0 {
			dst = append(dst, `,"redirects":[`...)
			for j, r := range c.Redirects {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendString(append(dst, `{"op":`...), r.Op)
				dst = appendString(append(dst, `,"target":`...), r.Target)
				dst = appendBool(append(dst, `,"write":`...), r.Write)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		dst = appendStringOmit(dst, `,"context":`, c.Context)
		if c.Dynamic {
			dst = append(dst, `,"dynamic":true`...)
		}
		dst = appendIntOmit(dst, `,"pipeline":`, c.Pipeline)
		dst = appendIntOmit(dst, `,"stage":`, c.Stage)
		if r := c.Source; r != nil {
			dst = append(dst, `,"source":{"start":`...)
			dst = strconv.AppendInt(dst, int64(r.Start), 10)
			dst = append(dst, `,"end":`...)
			dst = strconv.AppendInt(dst, int64(r.End), 10)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendPath(dst []byte, p *abi.Path) []byte {
	dst = append(dst, `{"path":`...)
	dst = appendString(dst, p.Path)
	dst = appendStringOmit(dst, `,"asked":`, p.Asked)
	dst = appendStringOmit(dst, `,"resolved":`, p.Resolved)
	dst = appendString(append(dst, `,"access":`...), p.Access)
	dst = appendBool(append(dst, `,"insideCwd":`...), p.InsideCwd)
	dst = appendStringOmit(dst, `,"source":`, p.Source)
	return append(dst, '}')
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

func appendIntOmit(dst []byte, key string, n int) []byte {
	if n == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(n), 10)
}

func appendStringOmit(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, key...), s)
}

// appendStrings writes a nil list as [] (only Command.Argv, which is
// required, is written this way; the optional lists are omitted).
func appendStrings(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

func appendStringsOmit(dst []byte, key string, list []string) []byte {
	if len(list) == 0 {
		return dst
	}
	return appendStrings(append(dst, key...), list)
}

// appendRawOmit writes raw compacted, as encoding/json does with a
// RawMessage; invalid JSON is an error.
func appendRawOmit(dst []byte, key string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return dst, nil
	}
	dst = append(dst, key...)
	if out, ok := compactJSON(dst, raw); ok {
		return out, nil
	}
	buf := bytes.NewBuffer(dst)
	err := json.Compact(buf, raw)
	return buf.Bytes(), err
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does without HTML escaping:
// control characters, quote and backslash escaped, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

package suggestions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/permhost/permhost/abi"
)

// Sources of a [abi.ChangeSet].
const (
	SourceACPMeta   = "acp-meta"
	SourceClaudeSDK = "claude-sdk"
)

// Errors of [Options]. A malformed options list is an error, not an empty
// list, so that the caller falls back instead of deciding on less.
var (
	ErrOptions     = errors.New("suggestions: malformed options")
	ErrDuplicateID = errors.New("suggestions: duplicate optionId")
)

// rawOption is the part of an ACP PermissionOption this package reads.
type rawOption struct {
	OptionID *string         `json:"optionId"`
	Name     *string         `json:"name"`
	Kind     *string         `json:"kind"`
	Meta     json.RawMessage `json:"_meta"`
}

// Options turns the options array of a session/request_permission into
// plugin options, in the agent's order, with Durable and Changes set.
// requestKind is the tool call's kind: every option of a switch_mode
// request is durable. An options value that is not an array of objects
// with string optionId and kind, or that repeats an optionId, is an error.
// A null or absent options value gives no options.
func Options(requestKind string, options json.RawMessage) ([]abi.Option, error) {
	trimmed := bytes.TrimSpace(options)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return []abi.Option{}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(trimmed, &raws); err != nil {
		return nil, fmt.Errorf("%w: not an array: %v", ErrOptions, err)
	}
	out := make([]abi.Option, 0, len(raws))
	seen := make(map[string]bool, len(raws))
	for i, raw := range raws {
		var ro rawOption
		if err := json.Unmarshal(raw, &ro); err != nil {
			return nil, fmt.Errorf("%w: option %d: %v", ErrOptions, i, err)
		}
		if ro.OptionID == nil || ro.Kind == nil {
			return nil, fmt.Errorf("%w: option %d: optionId and kind must be strings", ErrOptions, i)
		}
		if seen[*ro.OptionID] {
			return nil, fmt.Errorf("%w %q", ErrDuplicateID, *ro.OptionID)
		}
		seen[*ro.OptionID] = true
		o := abi.Option{OptionID: *ro.OptionID, Kind: *ro.Kind}
		if ro.Name != nil {
			o.Name = *ro.Name
		}
		o.Changes = Parse(ro.Meta)
		o.Durable = Durable(requestKind, o.Kind, o.Changes)
		out = append(out, o)
	}
	return out, nil
}

// Durable reports whether choosing an option of kind optionKind, in a
// request whose tool call has kind requestKind, may change more than this
// one call. Only a plain allow_once or reject_once outside a switch_mode
// request, with no described changes, is not durable; an unknown kind is.
func Durable(requestKind, optionKind string, changes *abi.ChangeSet) bool {
	if requestKind == abi.KindSwitchMode || changes != nil {
		return true
	}
	return optionKind != abi.OptionAllowOnce && optionKind != abi.OptionRejectOnce
}

// metaKeys is the option _meta as far as it can describe changes.
type metaKeys struct {
	Permission json.RawMessage `json:"permission"`
	ClaudeCode json.RawMessage `json:"claudeCode"`
}

type claudeKeys struct {
	UpdatedPermissions json.RawMessage `json:"updatedPermissions"`
	Suggestions        json.RawMessage `json:"suggestions"`
	PermissionUpdates  json.RawMessage `json:"permissionUpdates"`
}

// Parse validates the changes described in one option's _meta and returns
// their snapshot, or nil when the option describes none. A description
// that fails validation gives Known false and the reason in Invalid.
func Parse(meta json.RawMessage) *abi.ChangeSet {
	meta = bytes.TrimSpace(meta)
	if len(meta) == 0 || bytes.Equal(meta, []byte("null")) {
		return nil
	}
	if err := checkJSON(meta); err != nil {
		return invalid("", "option _meta: "+err.Error())
	}
	var mk metaKeys
	if err := json.Unmarshal(meta, &mk); err != nil {
		// A _meta that is not an object describes no changes we could
		// read, but it may be meant to: fail closed.
		return invalid("", "option _meta is not an object")
	}
	var found []*abi.ChangeSet
	if present(mk.Permission) {
		if cs := parseACPMeta(mk.Permission); cs != nil {
			found = append(found, cs)
		}
	}
	if present(mk.ClaudeCode) {
		var ck claudeKeys
		if err := json.Unmarshal(mk.ClaudeCode, &ck); err == nil {
			for _, name := range []struct {
				key string
				raw json.RawMessage
			}{
				{"updatedPermissions", ck.UpdatedPermissions},
				{"suggestions", ck.Suggestions},
				{"permissionUpdates", ck.PermissionUpdates},
			} {
				if present(name.raw) {
					found = append(found, parseClaudeSDK(name.key, name.raw))
				}
			}
		}
	}
	switch len(found) {
	case 0:
		return nil
	case 1:
		return found[0]
	default:
		return invalid("", "option _meta describes its changes more than once")
	}
}

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

func invalid(source, why string) *abi.ChangeSet {
	return &abi.ChangeSet{Known: false, Source: source, Invalid: why}
}

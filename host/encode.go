package host

import (
	"encoding"
	"encoding/json"
	"reflect"
	"unsafe"

	"github.com/permhost/permhost/abi"
)

// Encoding the request is most of a warm decision's cost when it goes
// through abi.Request's MarshalJSON (measured: 72% of a warm Decide of a
// constant plugin): that method, and Shell's and Command's, only encode nil
// slices as [], but each runs a nested json.Encoder into a fresh buffer,
// which the outer encoder then validates and compacts again.
//
// requestTwin is abi.Request with those three struct types replaced by
// method-free twins of identical layout (reflect.StructOf over the same
// fields and tags), so encoding/json encodes it in one pass; the host
// normalizes the nil slices itself first. The result is byte for byte what
// json.Encoder with SetEscapeHTML(false) gives for the abi.Request (the
// tests compare them, and a fuzz target compares them on arbitrary
// requests). If the abi types ever get another marshaler, a field the twin
// cannot mirror, or a different layout, requestTwin is nil and the plain
// encoder is used.
var requestTwin = twinRequest()

// twinnedMarshalers are the abi types whose MarshalJSON the twin replaces
// with normalizeRequest.
var twinnedMarshalers = map[reflect.Type]bool{
	reflect.TypeFor[abi.Request](): true,
	reflect.TypeFor[abi.Shell]():   true,
	reflect.TypeFor[abi.Command](): true,
}

func twinRequest() reflect.Type {
	defer func() { _ = recover() }() // reflect.StructOf refusing a field
	tw := &twinner{memo: map[reflect.Type]reflect.Type{}}
	t, ok := tw.twin(reflect.TypeFor[abi.Request]())
	if !ok || t == reflect.TypeFor[abi.Request]() {
		return nil
	}
	return t
}

type twinner struct {
	memo map[reflect.Type]reflect.Type // nil value: in progress
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
)

func hasMethods(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(marshalerType) || p.Implements(textMarshalerType) || p.Implements(isZeroerType)
}

// twin returns t, or a method-free type of the same layout when t is or
// contains one of twinnedMarshalers; ok is false when that cannot be done
// safely.
func (tw *twinner) twin(t reflect.Type) (reflect.Type, bool) {
	if r, seen := tw.memo[t]; seen {
		return r, r != nil // a recursive type cannot be twinned
	}
	switch t.Kind() {
	case reflect.Pointer:
		e, ok := tw.twin(t.Elem())
		if !ok || e == t.Elem() {
			return t, ok
		}
		return reflect.PointerTo(e), true
	case reflect.Slice:
		e, ok := tw.twin(t.Elem())
		if !ok || e == t.Elem() || t.Name() != "" {
			return t, ok && e == t.Elem()
		}
		return reflect.SliceOf(e), true
	case reflect.Map, reflect.Array:
		e, ok := tw.twin(t.Elem())
		return t, ok && e == t.Elem()
	case reflect.Struct:
	default:
		return t, true
	}
	tw.memo[t] = nil
	twinned := twinnedMarshalers[t]
	if twinned {
		// Only MarshalJSON is replaced; any other encoding method would
		// be lost.
		p := reflect.PointerTo(t)
		if p.Implements(textMarshalerType) || p.Implements(isZeroerType) {
			return t, false
		}
	} else if hasMethods(t) {
		// Another encoding method: keep the type, but it must not contain
		// a type the twin replaces.
		tw.memo[t] = t
		return t, !tw.contains(t)
	}
	fields := make([]reflect.StructField, t.NumField())
	changed := twinned
	for i := range fields {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			return t, false
		}
		ft, ok := tw.twin(f.Type)
		if !ok {
			return t, false
		}
		changed = changed || ft != f.Type
		fields[i] = reflect.StructField{Name: f.Name, Type: ft, Tag: f.Tag}
	}
	if !changed {
		tw.memo[t] = t
		return t, true
	}
	r := reflect.StructOf(fields)
	if r.Size() != t.Size() || r.Align() != t.Align() {
		return t, false
	}
	for i := range fields {
		if r.Field(i).Offset != t.Field(i).Offset {
			return t, false
		}
	}
	tw.memo[t] = r
	return r, true
}

// contains reports whether t reaches one of twinnedMarshalers.
func (tw *twinner) contains(t reflect.Type) bool {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type) bool
	walk = func(t reflect.Type) bool {
		if seen[t] {
			return false
		}
		seen[t] = true
		if twinnedMarshalers[t] {
			return true
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			return walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if walk(t.Field(i).Type) {
					return true
				}
			}
		}
		return false
	}
	return walk(t)
}

// normalizeRequest does what the twinned MarshalJSON methods do: nil
// Options, Shell.Commands and Command.Argv encode as []. It copies the
// caller's Shell before changing it.
func normalizeRequest(req *abi.Request) {
	if req.Options == nil {
		req.Options = []abi.Option{}
	}
	s := req.Shell
	if s == nil {
		return
	}
	fix := s.Commands == nil
	for i := range s.Commands {
		fix = fix || s.Commands[i].Argv == nil
	}
	if !fix {
		return
	}
	c := *s
	c.Commands = make([]abi.Command, len(s.Commands))
	for i, cmd := range s.Commands {
		if cmd.Argv == nil {
			cmd.Argv = []string{}
		}
		c.Commands[i] = cmd
	}
	req.Shell = &c
}

// encodable returns what to hand the encoder for req: its twin view when
// there is one. req must not change until the encoding is done.
func encodable(req *abi.Request) any {
	if requestTwin == nil {
		return req
	}
	normalizeRequest(req)
	return reflect.NewAt(requestTwin, unsafe.Pointer(req)).Interface()
}

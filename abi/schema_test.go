package abi

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// schemaNode is the subset of JSON Schema the two files use.
type schemaNode struct {
	Ref        string                 `json:"$ref"`
	Type       string                 `json:"type"`
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Items      *schemaNode            `json:"items"`
	Enum       []string               `json:"enum"`
	AnyOf      []*schemaNode          `json:"anyOf"`
	Pattern    string                 `json:"pattern"`
	Const      *string                `json:"const"`
	Minimum    *float64               `json:"minimum"`
	If         *schemaNode            `json:"if"`
	Then       *schemaNode            `json:"then"`
	Defs       map[string]*schemaNode `json:"$defs"`
}

func loadSchema(t *testing.T, raw []byte) *schemaNode {
	t.Helper()
	var s schemaNode
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("schema does not parse: %v", err)
	}
	return &s
}

func (root *schemaNode) deref(n *schemaNode) (*schemaNode, string) {
	name, ok := strings.CutPrefix(n.Ref, "#/$defs/")
	if !ok {
		return n, ""
	}
	return root.Defs[name], name
}

// TestSchemaMatchesTypes walks the Go types from Request and Decision and the
// schema side by side: every json field is a property of a compatible type,
// every property is a field, required lists exactly the fields without
// omitempty, and every $def is reached.
func TestSchemaMatchesTypes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema []byte
		typ    reflect.Type
	}{
		{"request", RequestSchema, reflect.TypeFor[Request]()},
		{"decision", DecisionSchema, reflect.TypeFor[Decision]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := loadSchema(t, tc.schema)
			if root.Ref != "#/$defs/"+tc.typ.Name() {
				t.Errorf("top-level $ref = %q, want #/$defs/%s", root.Ref, tc.typ.Name())
			}
			seen := map[string]bool{}
			checkStruct(t, root, tc.typ, seen)
			for name := range root.Defs {
				if !seen[name] {
					t.Errorf("$defs/%s matches no Go type reachable from %s", name, tc.typ.Name())
				}
			}
		})
	}
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func checkStruct(t *testing.T, root *schemaNode, typ reflect.Type, seen map[string]bool) {
	t.Helper()
	if seen[typ.Name()] {
		return
	}
	seen[typ.Name()] = true
	def := root.Defs[typ.Name()]
	if def == nil {
		t.Errorf("no $defs/%s for Go type %s", typ.Name(), typ)
		return
	}
	if def.Type != "object" {
		t.Errorf("$defs/%s: type %q, want object", typ.Name(), def.Type)
	}
	var required []string
	fields := map[string]bool{}
	for f := range typ.Fields() {
		name, omitempty := jsonName(f)
		if name == "" {
			continue
		}
		fields[name] = true
		if !omitempty {
			required = append(required, name)
		}
		prop := def.Properties[name]
		where := typ.Name() + "." + f.Name
		if prop == nil {
			t.Errorf("%s: json %q is not a property of $defs/%s", where, name, typ.Name())
			continue
		}
		checkType(t, root, where, f.Type, prop, seen)
	}
	for name := range def.Properties {
		if !fields[name] {
			t.Errorf("$defs/%s.properties.%s is no field of %s", typ.Name(), name, typ)
		}
	}
	sort.Strings(required)
	got := slices.Sorted(slices.Values(def.Required))
	if !slices.Equal(got, required) {
		t.Errorf("$defs/%s.required = %v, want the fields without omitempty %v", typ.Name(), got, required)
	}
}

func checkType(t *testing.T, root *schemaNode, where string, typ reflect.Type, prop *schemaNode, seen map[string]bool) {
	t.Helper()
	if typ == rawMessage {
		if prop.Ref != "" {
			t.Errorf("%s: verbatim JSON must not be a $ref", where)
		}
		return
	}
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := map[reflect.Kind]string{
		reflect.String: "string", reflect.Bool: "boolean",
		reflect.Int: "integer", reflect.Int64: "integer", reflect.Int32: "integer",
		reflect.Slice: "array", reflect.Struct: "",
	}[typ.Kind()]
	switch typ.Kind() {
	case reflect.Struct:
		if prop.Ref != "#/$defs/"+typ.Name() {
			t.Errorf("%s: $ref %q, want #/$defs/%s", where, prop.Ref, typ.Name())
			return
		}
		checkStruct(t, root, typ, seen)
	case reflect.Slice:
		if prop.Type != "array" || prop.Items == nil {
			t.Errorf("%s: type %q with items %v, want an array", where, prop.Type, prop.Items)
			return
		}
		checkType(t, root, where+"[]", typ.Elem(), prop.Items, seen)
	default:
		if want == "" || prop.Type != want {
			t.Errorf("%s: Go %s has schema type %q, want %q", where, typ, prop.Type, want)
		}
	}
}

func jsonName(f reflect.StructField) (name string, omitempty bool) {
	tag, ok := f.Tag.Lookup("json")
	if !ok || tag == "-" || !f.IsExported() {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	return name, strings.Contains(","+opts+",", ",omitempty,")
}

// TestSchemaEnums checks each enum of the schemas against the constants of
// this package with the matching name prefix, read from the source so that a
// new constant without its enum value fails here.
func TestSchemaEnums(t *testing.T) {
	consts := constsByPrefix(t)
	req, dec := loadSchema(t, RequestSchema), loadSchema(t, DecisionSchema)
	enums := []struct {
		prefix string
		schema *schemaNode
		def    string
		prop   string
	}{
		{"Outcome", dec, "Decision", "outcome"},
		{"Scope", dec, "Decision", "scope"},
		{"Risk", dec, "Explanation", "riskLevel"},
		{"Option", req, "Option", "kind"},
		{"Kind", req, "ToolCall", "kind"},
		{"Access", req, "Path", "access"},
		{"Family", req, "Action", "family"},
		{"GrantScope", req, "Grant", "scope"},
	}
	checked := map[string]bool{}
	for _, e := range enums {
		checked[e.def+"."+e.prop] = true
		prop := e.schema.Defs[e.def].Properties[e.prop]
		if prop == nil {
			t.Errorf("%s.%s: no such property", e.def, e.prop)
			continue
		}
		want := consts[e.prefix]
		if len(want) == 0 {
			t.Errorf("no constants named %s*", e.prefix)
		}
		enum := prop.Enum
		if len(prop.AnyOf) > 0 {
			// An open enum (option kinds, ABI 1.4): the constants, or a
			// custom "_…" value.
			enum = prop.AnyOf[0].Enum
			if len(prop.AnyOf) != 2 || prop.AnyOf[1].Pattern != "^_" {
				t.Errorf("%s.%s: anyOf is not the enum or a custom \"_\" value", e.def, e.prop)
			}
		}
		if got := slices.Sorted(slices.Values(enum)); !slices.Equal(got, want) {
			t.Errorf("%s.%s enum = %v, want the %s* constants %v", e.def, e.prop, got, e.prefix, want)
		}
	}
	// No enum elsewhere that this test does not tie to constants.
	for _, s := range []*schemaNode{req, dec} {
		for def, d := range s.Defs {
			for prop, p := range d.Properties {
				if len(p.Enum) > 0 && !checked[def+"."+prop] {
					t.Errorf("%s.%s has an enum with no constants checked against it", def, prop)
				}
			}
		}
	}
}

// constsByPrefix returns the sorted string values of the package's constants
// grouped by the prefixes TestSchemaEnums knows.
func constsByPrefix(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	prefixes := []string{"Outcome", "Scope", "Risk", "Option", "Kind", "Access", "Family", "GrantScope"}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					for _, p := range prefixes {
						if strings.HasPrefix(id.Name, p) {
							out[p] = append(out[p], v)
						}
					}
				}
			}
		}
	}
	for p := range out {
		sort.Strings(out[p])
	}
	return out
}

// validate checks v (decoded JSON) against n: the subset of JSON Schema the
// files use. It returns the first violation.
func (root *schemaNode) validate(n *schemaNode, v any, at string) error {
	if n.Ref != "" {
		d, name := root.deref(n)
		if d == nil {
			return fmt.Errorf("%s: unresolved $ref %q", at, n.Ref)
		}
		_ = name
		n = d
	}
	switch n.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want object", at, v)
		}
		for _, r := range n.Required {
			if _, ok := m[r]; !ok {
				return fmt.Errorf("%s: missing required %q", at, r)
			}
		}
		for k, child := range m {
			if p := n.Properties[k]; p != nil {
				if err := root.validate(p, child, at+"."+k); err != nil {
					return err
				}
			}
		}
		if n.If != nil && n.Then != nil && root.validate(n.If, v, at) == nil {
			if err := root.validate(n.Then, v, at); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want array", at, v)
		}
		for i, child := range a {
			if err := root.validate(n.Items, child, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want string", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want boolean", at, v)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want integer", at, v)
		}
		if n.Minimum != nil && f < *n.Minimum {
			return fmt.Errorf("%s: %v below minimum %v", at, f, *n.Minimum)
		}
	case "":
		// Properties-only nodes (if/then) constrain present members only.
		if m, ok := v.(map[string]any); ok {
			for _, r := range n.Required {
				if _, ok := m[r]; !ok {
					return fmt.Errorf("%s: missing required %q", at, r)
				}
			}
			for k, p := range n.Properties {
				if child, ok := m[k]; ok {
					if err := root.validate(p, child, at+"."+k); err != nil {
						return err
					}
				}
			}
		}
	}
	if len(n.Enum) > 0 && !slices.Contains(n.Enum, fmt.Sprint(v)) {
		return fmt.Errorf("%s: %v not in %v", at, v, n.Enum)
	}
	if n.Const != nil && fmt.Sprint(v) != *n.Const {
		return fmt.Errorf("%s: %v, want %q", at, v, *n.Const)
	}
	return nil
}

func validateJSON(t *testing.T, schema []byte, doc []byte) error {
	t.Helper()
	root := loadSchema(t, schema)
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return err
	}
	return root.validate(root, v, "$")
}

// fill sets every field reachable from v to a non-zero value valid for the
// schema, so that encoding it exercises every property.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Slice:
		if v.Type() == rawMessage {
			v.SetBytes([]byte(`{"k":[1,"x"]}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.String:
		v.SetString("x")
	case reflect.Int:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	}
}

func TestSchemaValidatesEncodedValues(t *testing.T) {
	var req Request
	fill(reflect.ValueOf(&req).Elem())
	req.ToolCall.Kind, req.Options[0].Kind, req.Paths[0].Access = KindExecute, OptionAllowOnce, AccessWrite
	req.Action.Family, req.Options[0].Grants.Scope = FamilyShell, GrantScopeWorkspace
	b, _ := json.Marshal(req)
	if err := validateJSON(t, RequestSchema, b); err != nil {
		t.Errorf("a fully populated Request does not validate: %v\n%s", err, b)
	}
	b, _ = json.Marshal(Request{})
	if err := validateJSON(t, RequestSchema, b); err != nil {
		t.Errorf("a zero Request does not validate: %v\n%s", err, b)
	}

	valid := []Decision{
		{Outcome: OutcomeAbstain},
		{Outcome: OutcomeReject, Scope: ScopeAlways, Reason: "r"},
		{Outcome: OutcomeSelect, OptionID: "allow", Explanation: &Explanation{Summary: "s", Risk: "r", RiskLevel: RiskHigh}},
	}
	for _, d := range valid {
		b, _ := json.Marshal(d)
		if err := validateJSON(t, DecisionSchema, b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	invalid := []string{
		`{}`,
		`{"outcome":"deny"}`,
		`{"outcome":"allow","scope":"forever"}`,
		`{"outcome":"select"}`,
		`{"outcome":"abstain","explanation":{"riskLevel":"extreme"}}`,
		`{"outcome":"abstain","reason":7}`,
		`[]`,
	}
	for _, doc := range invalid {
		if err := validateJSON(t, DecisionSchema, []byte(doc)); err == nil {
			t.Errorf("%s validates, want an error", doc)
		}
	}
}

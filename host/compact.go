package host

// Compacting the request's raw JSON (Request.Raw, ToolCall.RawInput, the
// config) with json.Compact was half of encoding a 1 KiB request: its
// scanner calls a function per byte. compactJSON validates and compacts in
// one tight pass for the JSON it is sure of, and leaves the rest (anything
// it does not accept, nesting deeper than maxCompactDepth) to json.Compact,
// so that it never accepts what encoding/json refuses nor writes other
// bytes (FuzzCompactJSON compares them).

const maxCompactDepth = 1000

// compactJSON appends src compacted to dst, and reports false (dst then
// holding partial output past its original length) when it is not sure
// src is valid.
func compactJSON(dst, src []byte) ([]byte, bool) {
	c := compactor{src: src, out: dst}
	c.space()
	if !c.value(0) {
		return dst, false
	}
	c.space()
	return c.out, c.i == len(c.src)
}

type compactor struct {
	src []byte
	i   int
	out []byte
}

func (c *compactor) space() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// separator reads what follows a member or an element: a comma (more
// follow) or close (the end), copied; ok is false for anything else.
func (c *compactor) separator(close byte) (more, ok bool) {
	c.space()
	if c.i >= len(c.src) {
		return false, false
	}
	switch c.src[c.i] {
	case ',':
		c.out = append(c.out, ',')
		c.i++
		c.space()
		return true, true
	case close:
		c.out = append(c.out, close)
		c.i++
		return false, true
	}
	return false, false
}

func (c *compactor) value(depth int) bool {
	if c.i >= len(c.src) || depth > maxCompactDepth {
		return false
	}
	switch b := c.src[c.i]; {
	case b == '"':
		return c.string()
	case b == '{':
		c.out = append(c.out, '{')
		c.i++
		c.space()
		if c.i < len(c.src) && c.src[c.i] == '}' {
			c.out = append(c.out, '}')
			c.i++
			return true
		}
		for {
			if c.i >= len(c.src) || c.src[c.i] != '"' || !c.string() {
				return false
			}
			c.space()
			if c.i >= len(c.src) || c.src[c.i] != ':' {
				return false
			}
			c.out = append(c.out, ':')
			c.i++
			c.space()
			if !c.value(depth + 1) {
				return false
			}
			if more, ok := c.separator('}'); !more {
				return ok
			}
		}
	case b == '[':
		c.out = append(c.out, '[')
		c.i++
		c.space()
		if c.i < len(c.src) && c.src[c.i] == ']' {
			c.out = append(c.out, ']')
			c.i++
			return true
		}
		for {
			if !c.value(depth + 1) {
				return false
			}
			if more, ok := c.separator(']'); !more {
				return ok
			}
		}
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(c.src)-c.i >= len(lit) && string(c.src[c.i:c.i+len(lit)]) == lit {
				c.out = append(c.out, lit...)
				c.i += len(lit)
				return true
			}
		}
		return false
	}
}

// string copies the string at src[i] (a '"'), checking its escapes and
// that it holds no control character, as encoding/json's scanner does (it
// does not check UTF-8).
func (c *compactor) string() bool {
	start := c.i
	c.i++
	for c.i < len(c.src) {
		switch b := c.src[c.i]; {
		case b == '"':
			c.i++
			c.out = append(c.out, c.src[start:c.i]...)
			return true
		case b < 0x20:
			return false
		case b == '\\':
			if c.i+1 >= len(c.src) {
				return false
			}
			switch c.src[c.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				if c.i+6 > len(c.src) {
					return false
				}
				for _, h := range c.src[c.i+2 : c.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				c.i += 6
			default:
				return false
			}
		default:
			c.i++
		}
	}
	return false
}

// number copies -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *compactor) number() bool {
	start := c.i
	if c.src[c.i] == '-' {
		c.i++
	}
	if c.i >= len(c.src) {
		return false
	}
	switch b := c.src[c.i]; {
	case b == '0':
		c.i++
	case b >= '1' && b <= '9':
		c.digits()
	default:
		return false
	}
	if c.i < len(c.src) && c.src[c.i] == '.' {
		c.i++
		if !c.digits() {
			return false
		}
	}
	if c.i < len(c.src) && (c.src[c.i] == 'e' || c.src[c.i] == 'E') {
		c.i++
		if c.i < len(c.src) && (c.src[c.i] == '+' || c.src[c.i] == '-') {
			c.i++
		}
		if !c.digits() {
			return false
		}
	}
	c.out = append(c.out, c.src[start:c.i]...)
	return true
}

// digits skips [0-9]+ and reports whether there was one.
func (c *compactor) digits() bool {
	start := c.i
	for c.i < len(c.src) && c.src[c.i] >= '0' && c.src[c.i] <= '9' {
		c.i++
	}
	return c.i > start
}

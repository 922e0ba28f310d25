package jsontext

import (
	"math/big"
	"strconv"
)

// maxIDNumberLen bounds the text of a numeric id that is compared by value;
// a longer one (or an exponent past ±maxIDExponent) is refused rather than
// expanded into a huge rational.
const (
	maxIDNumberLen = 64
	maxIDExponent  = 400
)

// CanonicalID returns one canonical text for a JSON-RPC id, so that ids are
// matched by JSON value: a string by its unescaped value ("a" and "\u0061"
// are one id), a number by its numeric value (55, 55.0 and 5.5e1 are one
// id), and null. Any other value, or a number too long to compare, is
// ErrType.
func CanonicalID(b []byte) (string, error) {
	if err := Check(b); err != nil {
		return "", err
	}
	b = trimSpace(b)
	switch c := b[0]; {
	case c == '"':
		return "s" + strconv.Quote(unquote(b)), nil
	case c == 'n':
		return "null", nil
	case c == '-' || c >= '0' && c <= '9':
		if len(b) > maxIDNumberLen {
			return "", fail(0, ErrType)
		}
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return "n" + strconv.FormatInt(n, 10), nil
		}
		if exp := exponent(b); exp > maxIDExponent || exp < -maxIDExponent {
			return "", fail(0, ErrType)
		}
		r, ok := new(big.Rat).SetString(string(b))
		if !ok {
			return "", fail(0, ErrType)
		}
		return "n" + r.RatString(), nil
	}
	return "", fail(0, ErrType)
}

// exponent returns the exponent part of a checked number, 0 when absent
// or not readable.
func exponent(b []byte) int {
	for i, c := range b {
		if c == 'e' || c == 'E' {
			n, _ := strconv.Atoi(string(b[i+1:]))
			return n
		}
	}
	return 0
}

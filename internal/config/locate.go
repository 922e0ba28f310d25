package config

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// keyLines maps each key of a TOML document to the 1-based line that defines
// it, written as the paths in [Error.Key]: "strategy", "log.path",
// "plugin[1].timeout", "plugin[0].config.paths". The toml package does not
// expose positions of keys it decoded, so this small scanner recovers them;
// it understands the subset of TOML positions matter for (tables, arrays of
// tables, bare, quoted and dotted keys) and gives up silently elsewhere.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	counts := map[string]int{} // array-of-tables header → occurrences so far
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), len(data)+1)
	inMultiline := ""
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if inMultiline != "" {
			if strings.Contains(line, inMultiline) {
				inMultiline = ""
			}
			continue
		}
		switch {
		case line == "" || line[0] == '#':
			continue
		case strings.HasPrefix(line, "[["):
			name := normalizeKey(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(stripComment(line), "[[")), "]]"))
			base := indexedPath(name, counts)
			idx := counts[base]
			counts[base]++
			table = base + "[" + strconv.Itoa(idx) + "]"
			setFirst(lines, table, n)
		case line[0] == '[':
			name := normalizeKey(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(stripComment(line), "[")), "]"))
			table = indexedPath(name, counts)
			setFirst(lines, table, n)
		default:
			eq := keyEnd(line)
			if eq < 0 {
				continue
			}
			key := normalizeKey(line[:eq])
			full := key
			if table != "" {
				full = table + "." + key
			}
			setFirst(lines, full, n)
			rest := strings.TrimSpace(line[eq+1:])
			for _, q := range []string{`"""`, `'''`} {
				if strings.HasPrefix(rest, q) && !strings.Contains(rest[3:], q) {
					inMultiline = q
				}
			}
		}
	}
	return lines
}

// KeyLines maps each key of the TOML document data to its 1-based line,
// keys written as in [Error.Key] ("case[1].comand"), for other files that
// report mistakes the way a configuration does (permhost test's files).
func KeyLines(data []byte) map[string]int { return keyLines(data) }

// indexedPath rewrites a dotted table name so that each prefix that is an
// array of tables carries the index of its latest element:
// "plugin.config" → "plugin[0].config".
func indexedPath(name string, counts map[string]int) string {
	parts := strings.Split(name, ".")
	out := ""
	for i, p := range parts {
		if out != "" {
			out += "."
		}
		out += p
		if c, ok := counts[out]; ok && i < len(parts)-1 {
			out += "[" + strconv.Itoa(c-1) + "]"
		}
	}
	return out
}

func setFirst(m map[string]int, k string, n int) {
	if _, ok := m[k]; !ok {
		m[k] = n
	}
}

// keyEnd returns the index of the '=' ending the key of a key/value line.
func keyEnd(line string) int { return unquotedIndex(line, '=') }

// unquotedIndex returns the index of the first c in s outside a '...' or
// "..." quote, or -1.
func unquotedIndex(s string, c byte) int {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		switch {
		case quote != 0:
			if s[i] == quote {
				quote = 0
			}
		case s[i] == '"' || s[i] == '\'':
			quote = s[i]
		case s[i] == c:
			return i
		}
	}
	return -1
}

func normalizeKey(k string) string {
	var parts []string
	for _, p := range splitDotted(k) {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && (p[0] == '"' || p[0] == '\'') && p[len(p)-1] == p[0] {
			p = p[1 : len(p)-1]
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ".")
}

func splitDotted(k string) []string {
	var parts []string
	for {
		i := unquotedIndex(k, '.')
		if i < 0 {
			return append(parts, k)
		}
		parts = append(parts, k[:i])
		k = k[i+1:]
	}
}

func stripComment(line string) string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		return strings.TrimSpace(line[:i])
	}
	return line
}

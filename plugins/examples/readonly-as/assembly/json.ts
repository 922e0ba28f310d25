// A small JSON reader: enough to walk a permhost Request. It builds a tree of
// JSONValue, keeps numbers as their source text (the plugin never computes
// with them) and refuses anything that is not strict JSON (RFC 8259), so a
// malformed request fails the call instead of being half understood.

export const enum Kind {
  Null,
  Bool,
  Number,
  String,
  Array,
  Object,
}

// Nesting deeper than this is refused rather than recursed into, so that a
// hostile rawInput cannot exhaust the call stack.
const maxDepth = 256;

export class JSONValue {
  kind: Kind = Kind.Null;
  bool: bool = false;
  // text holds a string's decoded value or a number's source text.
  text: string = "";
  items: JSONValue[] = [];
  keys: string[] = [];

  // get returns the member named key of an object (the last one when a key
  // repeats, as Go's encoding/json does), or null.
  get(key: string): JSONValue | null {
    if (this.kind != Kind.Object) return null;
    for (let i = this.keys.length - 1; i >= 0; i--) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }

  // str returns the member key when it is a string, else "".
  str(key: string): string {
    const v = this.get(key);
    if (v === null || v.kind != Kind.String) return "";
    return v.text;
  }

  isNull(): bool {
    return this.kind == Kind.Null;
  }
}

export class ParseError {
  constructor(public message: string, public offset: i32) {}
}

export class Parser {
  private s: string;
  private i: i32 = 0;
  error: ParseError | null = null;

  constructor(s: string) {
    this.s = s;
  }

  // parse returns the document's value, or null with error set.
  parse(): JSONValue | null {
    const v = this.value(0);
    if (v === null) return null;
    this.ws();
    if (this.i != this.s.length) return this.fail("trailing data after the value");
    return v;
  }

  private fail(message: string): JSONValue | null {
    if (this.error === null) this.error = new ParseError(message, this.i);
    return null;
  }

  private ws(): void {
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
      this.i++;
    }
  }

  private value(depth: i32): JSONValue | null {
    if (depth > maxDepth) return this.fail("nesting too deep");
    this.ws();
    if (this.i >= this.s.length) return this.fail("unexpected end of input");
    const c = this.s.charCodeAt(this.i);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) {
      const text = this.string();
      if (text === null) return null;
      const v = new JSONValue();
      v.kind = Kind.String;
      v.text = text;
      return v;
    }
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (this.literal("true")) {
      const v = new JSONValue();
      v.kind = Kind.Bool;
      v.bool = true;
      return v;
    }
    if (this.literal("false")) {
      const v = new JSONValue();
      v.kind = Kind.Bool;
      return v;
    }
    if (this.literal("null")) return new JSONValue();
    return this.fail("unexpected character");
  }

  private literal(word: string): bool {
    if (this.s.substr(this.i, word.length) != word) return false;
    this.i += word.length;
    return true;
  }

  private object(depth: i32): JSONValue | null {
    const v = new JSONValue();
    v.kind = Kind.Object;
    this.i++; // {
    this.ws();
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x7d) {
      this.i++;
      return v;
    }
    while (true) {
      this.ws();
      if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 0x22) {
        return this.fail("expected a member name");
      }
      const key = this.string();
      if (key === null) return null;
      this.ws();
      if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 0x3a) {
        return this.fail("expected ':'");
      }
      this.i++;
      const item = this.value(depth + 1);
      if (item === null) return null;
      v.keys.push(key);
      v.items.push(item);
      this.ws();
      if (this.i >= this.s.length) return this.fail("unexpected end of object");
      const c = this.s.charCodeAt(this.i++);
      if (c == 0x7d) return v;
      if (c != 0x2c) return this.fail("expected ',' or '}'");
    }
  }

  private array(depth: i32): JSONValue | null {
    const v = new JSONValue();
    v.kind = Kind.Array;
    this.i++; // [
    this.ws();
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x5d) {
      this.i++;
      return v;
    }
    while (true) {
      const item = this.value(depth + 1);
      if (item === null) return null;
      v.items.push(item);
      this.ws();
      if (this.i >= this.s.length) return this.fail("unexpected end of array");
      const c = this.s.charCodeAt(this.i++);
      if (c == 0x5d) return v;
      if (c != 0x2c) return this.fail("expected ',' or ']'");
    }
  }

  private number(): JSONValue | null {
    const start = this.i;
    if (this.s.charCodeAt(this.i) == 0x2d) this.i++;
    if (this.digits() == 0) return this.fail("bad number");
    // No leading zeros: "01" is not JSON.
    if (this.s.charCodeAt(start + (this.s.charCodeAt(start) == 0x2d ? 1 : 0)) == 0x30 &&
        this.i - start > (this.s.charCodeAt(start) == 0x2d ? 2 : 1)) {
      return this.fail("bad number");
    }
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x2e) {
      this.i++;
      if (this.digits() == 0) return this.fail("bad number");
    }
    if (this.i < this.s.length) {
      const e = this.s.charCodeAt(this.i);
      if (e == 0x65 || e == 0x45) {
        this.i++;
        if (this.i < this.s.length) {
          const sign = this.s.charCodeAt(this.i);
          if (sign == 0x2b || sign == 0x2d) this.i++;
        }
        if (this.digits() == 0) return this.fail("bad number");
      }
    }
    const v = new JSONValue();
    v.kind = Kind.Number;
    v.text = this.s.substring(start, this.i);
    return v;
  }

  private digits(): i32 {
    const start = this.i;
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c < 0x30 || c > 0x39) break;
      this.i++;
    }
    return this.i - start;
  }

  // string reads a quoted string at the cursor and returns its value, or null
  // with error set.
  private string(): string | null {
    this.i++; // opening quote
    const parts: string[] = [];
    let run = this.i;
    while (true) {
      if (this.i >= this.s.length) {
        this.fail("unterminated string");
        return null;
      }
      const c = this.s.charCodeAt(this.i);
      if (c == 0x22) {
        parts.push(this.s.substring(run, this.i));
        this.i++;
        return parts.join("");
      }
      if (c < 0x20) {
        this.fail("control character in string");
        return null;
      }
      if (c != 0x5c) {
        this.i++;
        continue;
      }
      parts.push(this.s.substring(run, this.i));
      this.i++; // backslash
      if (this.i >= this.s.length) {
        this.fail("unterminated escape");
        return null;
      }
      const e = this.s.charCodeAt(this.i++);
      if (e == 0x22) parts.push('"');
      else if (e == 0x5c) parts.push("\\");
      else if (e == 0x2f) parts.push("/");
      else if (e == 0x62) parts.push("\b");
      else if (e == 0x66) parts.push("\f");
      else if (e == 0x6e) parts.push("\n");
      else if (e == 0x72) parts.push("\r");
      else if (e == 0x74) parts.push("\t");
      else if (e == 0x75) {
        const unit = this.hex4();
        if (unit < 0) {
          this.fail("bad \\u escape");
          return null;
        }
        // Surrogate pairs arrive as two escapes; JavaScript strings are
        // UTF-16, so each unit is kept as it is.
        parts.push(String.fromCharCode(unit));
      } else {
        this.fail("unknown escape");
        return null;
      }
      run = this.i;
    }
  }

  private hex4(): i32 {
    if (this.i + 4 > this.s.length) return -1;
    let n: i32 = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.s.charCodeAt(this.i + k);
      let d: i32;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      else return -1;
      n = (n << 4) | d;
    }
    this.i += 4;
    return n;
  }
}

// quote returns s as a JSON string literal.
export function quote(s: string): string {
  const parts: string[] = ['"'];
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20 || c == 0x2028 || c == 0x2029) {
      const hex = c.toString(16);
      esc = "\\u" + "0000".substr(0, 4 - hex.length) + hex;
    } else continue;
    parts.push(s.substring(run, i));
    parts.push(esc);
    run = i + 1;
  }
  parts.push(s.substring(run));
  parts.push('"');
  return parts.join("");
}

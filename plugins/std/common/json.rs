// A strict JSON reader (RFC 8259, as Go's encoding/json reads it: invalid
// UTF-8 and lone surrogates become U+FFFD) and the string writer of Go's
// encoder with SetEscapeHTML(false), so that the modules answer byte for
// byte what the Go pdk answered.

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// What Go's UnmarshalTypeError calls this value.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Num(_) => "number",
            Json::Str(_) => "string",
            Json::Arr(_) => "array",
            Json::Obj(_) => "object",
        }
    }
    /// The member key of an object, the last one when repeated (as Go).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    /// The member Go's decoder puts in the field key: the last whose key
    /// folds to it (ASCII case, and the runes that fold to k and s).
    pub fn get_fold(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().rev().find(|(k, _)| fold(k) == fold(key)).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
}

pub struct Parsed {
    pub value: Json,
    /// The bytes of each member of the top-level object, by key (last wins).
    pub spans: Vec<(String, usize, usize)>,
    /// Where the last skipped member that was the known value starts
    /// (parse_keeping_known).
    pub known_at: Option<usize>,
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
    /// false while checking a value that is not kept: nothing is built.
    build: bool,
    /// The bytes of a value known to be valid (parse_keeping_known).
    known: Option<&'a [u8]>,
    /// Where the last member recognised as known starts.
    known_at: Option<usize>,
}

/// b starts with prefix, compared eight bytes at a time (a byte loop is
/// what memcmp is in wasm).
pub fn starts_with(b: &[u8], prefix: &[u8]) -> bool {
    if b.len() < prefix.len() {
        return false;
    }
    let b = &b[..prefix.len()];
    let (mut x, mut y) = (b.chunks_exact(8), prefix.chunks_exact(8));
    for (p, q) in (&mut x).zip(&mut y) {
        if u64::from_le_bytes(p.try_into().unwrap()) != u64::from_le_bytes(q.try_into().unwrap()) {
            return false;
        }
    }
    x.remainder() == y.remainder()
}

pub fn parse(b: &[u8]) -> Result<Json, String> {
    parse_spans(b).map(|p| p.value)
}

pub fn parse_spans(b: &[u8]) -> Result<Parsed, String> {
    parse_keeping(b, &[])
}

/// parse_spans, with the top-level members named in skip checked but not
/// built (Json::Null in the tree; their bytes are in spans).
pub fn parse_keeping(b: &[u8], skip: &[&str]) -> Result<Parsed, String> {
    parse_keeping_known(b, skip, None)
}

/// parse_keeping, where a skipped member whose bytes begin with known (the
/// bytes of an object, array or string this reader found valid before)
/// is that value, unread: an instance's config arrives unchanged in every
/// request.
pub fn parse_keeping_known(b: &[u8], skip: &[&str], known: Option<&[u8]>) -> Result<Parsed, String> {
    // Only a value that ends where it closes can be recognised by its
    // prefix (a number or literal could go on).
    let known = known.filter(|k| matches!(k.first(), Some(b'{') | Some(b'[') | Some(b'"')));
    let mut p = P { b, i: 0, build: true, known, known_at: None };
    let mut spans = Vec::new();
    p.ws();
    let value = p.value(0, Some((&mut spans, skip)))?;
    p.ws();
    if p.i != b.len() {
        return Err(p.err("after top-level value"));
    }
    Ok(Parsed { value, spans, known_at: p.known_at })
}

/// The value at b[i] (after any whitespace) read as [parse] reads a value
/// nested depth deep, and where it ends; with build false it is only
/// checked (Json::Null).
pub fn value_at(b: &[u8], i: usize, depth: usize, build: bool) -> Result<(Json, usize), String> {
    let mut p = P { b, i, build, known: None, known_at: None };
    p.ws();
    let v = p.value(depth, None)?;
    Ok((v, p.i))
}

/// The string whose opening quote is at b[i], as [parse] reads it, and
/// where it ends.
pub fn string_at(b: &[u8], i: usize) -> Result<(String, usize), String> {
    let mut p = P { b, i, build: true, known: None, known_at: None };
    let s = p.string()?;
    Ok((s, p.i))
}

impl<'a> P<'a> {
    fn err(&self, ctx: &str) -> String {
        match self.b.get(self.i) {
            None => "unexpected end of JSON input".to_string(),
            Some(c) => format!("invalid character {} {}", quote_char(*c), ctx),
        }
    }
    fn ws(&mut self) {
        while let Some(c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1
            } else {
                break;
            }
        }
    }
    fn lit(&mut self, word: &[u8], v: Json) -> Result<Json, String> {
        for &w in word {
            if self.b.get(self.i) != Some(&w) {
                return Err(self.err("in literal"));
            }
            self.i += 1;
        }
        Ok(v)
    }
    fn value(&mut self, depth: usize, spans: Option<(&mut Vec<(String, usize, usize)>, &[&str])>) -> Result<Json, String> {
        if depth > 10000 {
            return Err("exceeded max depth".to_string());
        }
        match self.b.get(self.i) {
            None => Err(self.err("")),
            Some(b'{') => {
                self.i += 1;
                let mut m = Vec::new();
                let mut spans = spans;
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err("looking for beginning of object key string"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err("after object key"));
                    }
                    self.i += 1;
                    self.ws();
                    let start = self.i;
                    let keep = self.build;
                    let skip = spans.as_ref().map(|(_, skip)| skip.contains(&k.as_str())).unwrap_or(false);
                    if skip {
                        self.build = false;
                    }
                    let v = match self.known {
                        Some(kb) if skip && starts_with(&self.b[self.i..], kb) => {
                            self.i += kb.len();
                            self.known_at = Some(start);
                            Json::Null
                        }
                        _ => self.value(depth + 1, None)?,
                    };
                    self.build = keep;
                    if let Some((s, _)) = spans.as_mut() {
                        s.push((k.clone(), start, self.i));
                    }
                    if self.build {
                        m.push((k, v));
                    }
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => return Err(self.err("after object key:value pair")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    self.ws();
                    let v = self.value(depth + 1, None)?;
                    if self.build {
                        a.push(v);
                    }
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(self.err("after array element")),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.lit(b"true", Json::Bool(true)),
            Some(b'f') => self.lit(b"false", Json::Bool(false)),
            Some(b'n') => self.lit(b"null", Json::Null),
            Some(b'-') | Some(b'0'..=b'9') => self.number(),
            _ => Err(self.err("looking for beginning of value")),
        }
    }
    fn digits(&mut self) -> usize {
        let s = self.i;
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1
        }
        self.i - s
    }
    fn number(&mut self) -> Result<Json, String> {
        let s = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("in numeric literal")),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.err("after decimal point in numeric literal"));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("in exponent of numeric literal"));
            }
        }
        if !self.build {
            return Ok(Json::Null);
        }
        Ok(Json::Num(String::from_utf8_lossy(&self.b[s..self.i]).into_owned()))
    }
    fn hex4(&mut self) -> Option<u32> {
        let h = self.b.get(self.i..self.i + 4)?;
        let mut v = 0u32;
        for &c in h {
            v = v * 16 + (c as char).to_digit(16)?;
        }
        self.i += 4;
        Some(v)
    }
    fn string(&mut self) -> Result<String, String> {
        // The common case first: no escape, no control character and valid
        // UTF-8 up to the closing quote is the string's bytes as they are.
        let b = self.b;
        let start = self.i + 1;
        let (j, ascii) = plain_run(b, start);
        if b.get(j) == Some(&b'"') {
            let run = &b[start..j];
            if ascii {
                self.i = j + 1;
                if !self.build {
                    return Ok(String::new());
                }
                // ASCII is UTF-8.
                return Ok(unsafe { std::str::from_utf8_unchecked(run) }.to_string());
            }
            if let Ok(s) = std::str::from_utf8(run) {
                self.i = j + 1;
                return Ok(if self.build { s.to_string() } else { String::new() });
            }
        }
        self.string_slow()
    }
    fn string_slow(&mut self) -> Result<String, String> {
        self.i += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = match self.b.get(self.i) {
                None => return Err(self.err("")),
                Some(c) => *c,
            };
            match c {
                b'"' => {
                    self.i += 1;
                    break;
                }
                b'\\' => {
                    self.i += 1;
                    let e = match self.b.get(self.i) {
                        None => return Err(self.err("")),
                        Some(e) => *e,
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let u = match self.hex4() {
                                Some(u) => u,
                                None => return Err(self.err("in \\u hexadecimal character escape")),
                            };
                            if (0xD800..0xDC00).contains(&u) {
                                // A high surrogate: only a low one after it makes a rune.
                                let save = self.i;
                                if self.b.get(self.i) == Some(&b'\\') && self.b.get(self.i + 1) == Some(&b'u') {
                                    self.i += 2;
                                    match self.hex4() {
                                        Some(l) if (0xDC00..0xE000).contains(&l) => {
                                            char::from_u32(0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)).unwrap_or('\u{FFFD}')
                                        }
                                        _ => {
                                            self.i = save;
                                            '\u{FFFD}'
                                        }
                                    }
                                } else {
                                    '\u{FFFD}'
                                }
                            } else {
                                char::from_u32(u).unwrap_or('\u{FFFD}')
                            }
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err("in string escape code"));
                        }
                    };
                    if self.build {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                }
                0..=0x1f => return Err(self.err("in string literal")),
                0..=0x7f => {
                    if self.build {
                        out.push(c);
                    }
                    self.i += 1;
                }
                _ => {
                    // A rune of UTF-8, or U+FFFD for each byte that is not one.
                    let end = (self.i + 4).min(self.b.len());
                    let n = match std::str::from_utf8(&self.b[self.i..end]) {
                        Ok(s) => s.chars().next().map(|c| c.len_utf8()).unwrap_or(0),
                        Err(e) if e.valid_up_to() > 0 => {
                            std::str::from_utf8(&self.b[self.i..self.i + e.valid_up_to()]).unwrap().chars().next().unwrap().len_utf8()
                        }
                        Err(_) => 0,
                    };
                    if n == 0 {
                        if self.build {
                            out.extend_from_slice("\u{FFFD}".as_bytes());
                        }
                        self.i += 1;
                    } else {
                        if self.build {
                            out.extend_from_slice(&self.b[self.i..self.i + n]);
                        }
                        self.i += n;
                    }
                }
            }
        }
        Ok(String::from_utf8(out).unwrap_or_default())
    }
}

/// Where the run of string bytes from i ends (at a quote, a backslash, a
/// control character or the end of b), and whether the run is ASCII. Eight
/// bytes at a time: this loop is most of reading a request.
pub fn plain_run(b: &[u8], mut i: usize) -> (usize, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut ascii = true;
    while i + 8 <= b.len() {
        let w = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        // A byte is zero in x exactly where the high bit of the result is
        // set (for bytes below 0x80 of w; non-ASCII words go bytewise).
        let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
        let special = zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64)) | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if w & HIGH != 0 {
            ascii = false;
            break;
        }
        if special != 0 {
            break;
        }
        i += 8;
    }
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            break;
        }
        ascii &= c < 0x80;
        i += 1;
    }
    (i, ascii)
}

fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x20..=0x7e => format!("'{}'", c as char),
        _ => format!("{}", super::text::go_quote(&[c])).replacen('"', "'", 2),
    }
}

/// Appends s as Go's encoder writes a string without HTML escaping.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u00{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An object writer: members in the order given, as Go writes a struct.
pub struct Obj {
    s: String,
    first: bool,
}

impl Obj {
    pub fn new() -> Obj {
        Obj { s: "{".to_string(), first: true }
    }
    fn key(&mut self, k: &str) {
        if !self.first {
            self.s.push(',');
        }
        self.first = false;
        write_str(&mut self.s, k);
        self.s.push(':');
    }
    pub fn str(mut self, k: &str, v: &str) -> Obj {
        self.key(k);
        write_str(&mut self.s, v);
        self
    }
    /// A string member with Go's omitempty.
    pub fn opt(self, k: &str, v: &str) -> Obj {
        if v.is_empty() {
            self
        } else {
            self.str(k, v)
        }
    }
    pub fn raw(mut self, k: &str, v: &str) -> Obj {
        self.key(k);
        self.s.push_str(v);
        self
    }
    pub fn end(mut self) -> String {
        self.s.push('}');
        self.s
    }
}

pub fn str_array(v: &[&str]) -> String {
    let mut s = String::from("[");
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, x);
    }
    s.push(']');
    s
}

/// Go's folding of a key to a struct field's ASCII name.
pub fn fold(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{17F}' => 's',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

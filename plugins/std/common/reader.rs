// The request as the host writes it, read straight into a Request: no
// tree, no key strings, each kept string made once. It is only a fast
// path: anything it does not expect (a member of another type, an escaped
// or non-ASCII key, invalid JSON) makes it say "not me" (None), and
// parse_request's tree reader decides, errors included. So whatever it
// accepts, it reads as the tree reader would (a repeated key's last value
// wins in both).

use super::json::{self, Json};
use super::{Action, Command, Opt, PathEntry, Redirect, Request, Session, Shell, ToolCall};

/// None: not for this reader.
type F<T> = Option<T>;

/// What read found beside the request: the config member's bytes, and
/// whether they were the known config's, recognised without reading.
pub struct Found {
    pub config: Option<(usize, usize)>,
    pub known: bool,
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    known: Option<&'a [u8]>,
}

pub fn read<'a>(b: &'a [u8], known: Option<&'a [u8]>) -> F<(Request, Found)> {
    // As parse_keeping_known: only a value that ends where it closes is
    // recognised by its prefix.
    let known = known.filter(|k| matches!(k.first(), Some(b'{') | Some(b'[') | Some(b'"')));
    let mut r = Reader { b, i: 0, known };
    let mut req = Request::default();
    let mut found = Found { config: None, known: false };
    r.object(0, |r, key, depth| {
        let d = depth + 1; // the member's
        match key {
            b"session" => {
                req.session = r
                    .optional(d, |r, key, s: &mut Session, _| {
                        match key {
                            b"cwd" => s.cwd = r.string()?,
                            b"mode" => s.mode = r.string()?,
                            b"home" => s.home = r.string()?,
                            _ => return Some(false),
                        }
                        Some(true)
                    })?
                    .unwrap_or_default()
            }
            b"toolCall" => {
                req.tool_call = r
                    .optional(d, |r, key, t: &mut ToolCall, d| {
                        match key {
                            b"title" => t.title = r.string()?,
                            b"kind" => t.kind = r.string()?,
                            b"toolName" => t.tool_name = r.string()?,
                            b"rawInput" => t.raw_input = Some(r.json(d)?),
                            b"content" => t.content = Some(r.json(d)?),
                            b"locations" => {
                                t.locations = r.list(d, |r, d| {
                                    r.record(d, |r, key, path: &mut String, _| {
                                        if key != b"path" {
                                            return Some(false);
                                        }
                                        *path = r.string()?;
                                        Some(true)
                                    })
                                })?
                            }
                            _ => return Some(false),
                        }
                        Some(true)
                    })?
                    .unwrap_or_default()
            }
            b"action" => {
                req.action = r.optional(d, |r, key, a: &mut Action, _| {
                    match key {
                        b"family" => a.family = r.string()?,
                        b"command" => a.command = r.string()?,
                        b"cwd" => a.cwd = r.string()?,
                        b"paths" => a.paths = r.strings()?,
                        b"urls" => a.urls = r.strings()?,
                        _ => return Some(false),
                    }
                    Some(true)
                })?
            }
            b"options" => {
                req.options = r.list(d, |r, d| {
                    r.record(d, |r, key, o: &mut Opt, d| {
                        match key {
                            b"optionId" => o.option_id = r.string()?,
                            b"kind" => o.kind = r.string()?,
                            b"durable" => o.durable = r.boolean()?,
                            b"changes" => {
                                o.changes = r.optional(d, |r, key, known: &mut bool, _| {
                                    if key != b"known" {
                                        return Some(false);
                                    }
                                    *known = r.boolean()?;
                                    Some(true)
                                })?
                            }
                            _ => return Some(false),
                        }
                        Some(true)
                    })
                })?
            }
            b"shell" => {
                req.shell = r.optional(d, |r, key, sh: &mut Shell, d| {
                    match key {
                        b"source" => sh.source = r.string()?,
                        b"parsed" => sh.parsed = r.boolean()?,
                        b"reason" => sh.reason = r.string()?,
                        b"commands" => sh.commands = r.list(d, |r, d| r.command(d))?,
                        _ => return Some(false),
                    }
                    Some(true)
                })?
            }
            b"paths" => {
                req.paths = r.list(d, |r, d| {
                    r.record(d, |r, key, p: &mut PathEntry, _| {
                        match key {
                            b"path" => p.path = r.string()?,
                            b"resolved" => p.resolved = r.string()?,
                            b"access" => p.access = r.string()?,
                            b"insideCwd" => p.inside_cwd = r.boolean()?,
                            _ => return Some(false),
                        }
                        Some(true)
                    })
                })?
            }
            b"config" => {
                let start = r.i;
                match r.known {
                    Some(k) if json::starts_with(&r.b[r.i..], k) => {
                        r.i += k.len();
                        found.known = true;
                    }
                    _ => {
                        r.skip(d)?;
                        found.known = false;
                    }
                }
                found.config = Some((start, r.i));
            }
            _ => r.skip(d)?,
        }
        Some(())
    })?;
    r.ws();
    if r.i != b.len() {
        return None;
    }
    Some((req, found))
}

impl<'a> Reader<'a> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ') | Some(b'\t') | Some(b'\n') | Some(b'\r')) {
            self.i += 1
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self, w: &[u8]) -> bool {
        self.ws();
        if self.b[self.i.min(self.b.len())..].starts_with(w) && !matches!(self.b.get(self.i + w.len()), Some(c) if c.is_ascii_alphanumeric()) {
            self.i += w.len();
            true
        } else {
            false
        }
    }
    fn null(&mut self) -> bool {
        self.word(b"null")
    }
    /// The object here, depth deep, as a T: set is given each member's
    /// key and the depth of its value, reads the value into the T and says
    /// true, or says false and the member is skipped. A repeated key is
    /// read again, so the last one wins, as in the tree reader.
    fn record<T: Default>(&mut self, depth: usize, mut set: impl FnMut(&mut Self, &'a [u8], &mut T, usize) -> F<bool>) -> F<T> {
        let mut v = T::default();
        self.object(depth, |r, key, depth| {
            if !set(r, key, &mut v, depth + 1)? {
                r.skip(depth + 1)?;
            }
            Some(())
        })?;
        Some(v)
    }
    /// record, or None for null.
    fn optional<T: Default>(&mut self, depth: usize, set: impl FnMut(&mut Self, &'a [u8], &mut T, usize) -> F<bool>) -> F<Option<T>> {
        if self.null() {
            return Some(None);
        }
        self.record(depth, set).map(Some)
    }
    /// The members of the object here, depth deep, each given to f with
    /// its key, to read its value.
    fn object(&mut self, depth: usize, mut f: impl FnMut(&mut Self, &'a [u8], usize) -> F<()>) -> F<()> {
        if depth > 10000 || !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            let (end, ascii) = json::plain_run(self.b, self.i + 1);
            if self.b.get(end) != Some(&b'"') || !ascii {
                return None;
            }
            let key = &self.b[self.i + 1..end];
            self.i = end + 1;
            if !self.eat(b':') {
                return None;
            }
            self.ws();
            f(self, key, depth)?;
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                return Some(());
            }
            return None;
        }
    }
    /// The elements of the array here (null: none), each read by f; an
    /// element null is T's default, as an absent object.
    fn list<T: Default>(&mut self, depth: usize, mut f: impl FnMut(&mut Self, usize) -> F<T>) -> F<Vec<T>> {
        let mut out = Vec::new();
        if self.null() {
            return Some(out);
        }
        if depth > 10000 || !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(out);
        }
        loop {
            if self.null() {
                out.push(T::default());
            } else {
                out.push(f(self, depth + 1)?);
            }
            if self.eat(b',') {
                continue;
            }
            if self.eat(b']') {
                return Some(out);
            }
            return None;
        }
    }
    /// Steps over the value here, checked as the tree reader checks it
    /// (anything it is unsure of: not for this reader), building nothing.
    fn skip(&mut self, depth: usize) -> F<()> {
        if depth > 10000 {
            return None;
        }
        self.ws();
        match *self.b.get(self.i)? {
            b'"' => self.skip_string(),
            b'{' => {
                self.i += 1;
                if self.eat(b'}') {
                    return Some(());
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return None;
                    }
                    self.skip_string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    self.skip(depth + 1)?;
                    if self.eat(b',') {
                        continue;
                    }
                    return if self.eat(b'}') { Some(()) } else { None };
                }
            }
            b'[' => {
                self.i += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b',') {
                        continue;
                    }
                    return if self.eat(b']') { Some(()) } else { None };
                }
            }
            b't' => self.word(b"true").then(|| ()),
            b'f' => self.word(b"false").then(|| ()),
            b'n' => self.null().then(|| ()),
            _ => {
                let (_, end) = json::value_at(self.b, self.i, depth, false).ok()?;
                self.i = end;
                Some(())
            }
        }
    }

    /// Steps over the string whose quote is here: runs of plain bytes
    /// eight at a time, and the escapes JSON allows.
    fn skip_string(&mut self) -> F<()> {
        let b = self.b;
        let mut i = self.i + 1;
        loop {
            let (end, ascii) = json::plain_run(b, i);
            if !ascii {
                std::str::from_utf8(&b[i..end]).ok()?;
            }
            i = end;
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some(());
                }
                b'\\' => match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' if b.get(i + 2..i + 6)?.iter().all(|c| c.is_ascii_hexdigit()) => i += 6,
                    _ => return None,
                },
                _ => return None, // a control character
            }
        }
    }
    fn json(&mut self, depth: usize) -> F<Json> {
        let (v, end) = json::value_at(self.b, self.i, depth, true).ok()?;
        self.i = end;
        Some(v)
    }
    fn string(&mut self) -> F<String> {
        self.ws();
        match self.b.get(self.i) {
            Some(b'"') => {
                let (s, end) = json::string_at(self.b, self.i).ok()?;
                self.i = end;
                Some(s)
            }
            _ if self.null() => Some(String::new()),
            _ => None,
        }
    }
    fn boolean(&mut self) -> F<bool> {
        if self.word(b"true") {
            Some(true)
        } else if self.word(b"false") || self.null() {
            Some(false)
        } else {
            None
        }
    }
    fn int(&mut self, depth: usize) -> F<i64> {
        if self.null() {
            return Some(0);
        }
        match self.json(depth)? {
            Json::Num(n) => n.parse::<i64>().ok(),
            _ => None,
        }
    }
    fn strings(&mut self) -> F<Vec<String>> {
        self.list(0, |r, _| r.string())
    }
    fn command(&mut self, depth: usize) -> F<Command> {
        self.record(depth, |r, key, c: &mut Command, d| {
            match key {
                b"argv" => c.argv = r.strings()?,
                b"wrappers" => c.wrappers = r.strings()?,
                b"dynamic" => c.dynamic = r.boolean()?,
                b"pipeline" => c.pipeline = r.int(d)?,
                b"stage" => c.stage = r.int(d)?,
                b"assignments" => {
                    c.assignments = r.list(d, |r, d| {
                        r.record(d, |r, key, nv: &mut (String, String), _| {
                            match key {
                                b"name" => nv.0 = r.string()?,
                                b"value" => nv.1 = r.string()?,
                                _ => return Some(false),
                            }
                            Some(true)
                        })
                    })?
                }
                b"redirects" => {
                    c.redirects = r.list(d, |r, d| {
                        r.record(d, |r, key, rd: &mut Redirect, _| {
                            match key {
                                b"op" => rd.op = r.string()?,
                                b"target" => rd.target = r.string()?,
                                b"write" => rd.write = r.boolean()?,
                                _ => return Some(false),
                            }
                            Some(true)
                        })
                    })?
                }
                _ => return Some(false),
            }
            Some(true)
        })
    }
}

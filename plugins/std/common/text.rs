// Text helpers with the exact behaviour of the Go functions the Go plugins
// use: pdk.Clean, pdk.Suggest, strconv.Quote, path.Clean/Join/Base/Match,
// strings.Fields.

/// pdk.Clean: tabs and line breaks become spaces, other control characters
/// and bidirectional overrides '?'; cut to max bytes ending in "…".
pub fn clean(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        out.push(match c {
            '\t' | '\n' | '\r' => ' ',
            c if c.is_control() || is_bidi(c) => '?',
            c => c,
        });
    }
    if max == 0 || out.len() <= max {
        return out;
    }
    let mut cut = max as isize - 3;
    while cut > 0 && !out.is_char_boundary(cut as usize) {
        cut -= 1;
    }
    if cut <= 0 {
        return String::new();
    }
    out.truncate(cut as usize);
    out.push('…');
    out
}

fn is_bidi(c: char) -> bool {
    let r = c as u32;
    (0x202A..=0x202E).contains(&r) || (0x2066..=0x2069).contains(&r) || r == 0x200E || r == 0x200F || r == 0x061C
}

/// unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the
/// ASCII space. Rust's escape_debug escapes exactly the others (after the
/// first character of a string, where grapheme extenders are not escaped).
fn is_print(c: char) -> bool {
    if (c as u32) < 0x80 {
        return (0x20..0x7f).contains(&(c as u32));
    }
    let mut buf = [0u8; 4];
    let s = c.encode_utf8(&mut buf);
    let probe = format!("a{}", s);
    probe.escape_debug().to_string() == probe
}

/// strconv.Quote of the bytes b (which may cut a rune: each byte of invalid
/// UTF-8 is written \xXX).
pub fn go_quote(b: &[u8]) -> String {
    let mut out = String::from("\"");
    let mut i = 0;
    while i < b.len() {
        let end = (i + 4).min(b.len());
        let (c, n) = match std::str::from_utf8(&b[i..end]) {
            Ok(s) => {
                let c = s.chars().next().unwrap();
                (Some(c), c.len_utf8())
            }
            Err(e) if e.valid_up_to() > 0 => {
                let c = std::str::from_utf8(&b[i..i + e.valid_up_to()]).unwrap().chars().next().unwrap();
                (Some(c), c.len_utf8())
            }
            Err(_) => (None, 1),
        };
        i += n;
        let c = match c {
            None => {
                out.push_str(&format!("\\x{:02x}", b[i - 1]));
                continue;
            }
            Some(c) => c,
        };
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

pub fn quote(s: &str) -> String {
    go_quote(s.as_bytes())
}

/// fmt's %q of a []string: ["a" "b"].
pub fn quote_list(v: &[String]) -> String {
    let q: Vec<String> = v.iter().map(|s| quote(s)).collect();
    format!("[{}]", q.join(" "))
}

/// pdk.Suggest: the nearest known word by edit distance (case ignored, at
/// most 2), ties to the smallest.
pub fn suggest(word: &str, known: &[&str]) -> String {
    let mut best: Option<(&str, usize)> = None;
    let w = word.to_lowercase();
    for &k in known {
        let d = distance(w.as_bytes(), k.to_lowercase().as_bytes());
        match best {
            None => best = Some((k, d)),
            Some((b, bd)) if d < bd || (d == bd && k < b) => best = Some((k, d)),
            _ => {}
        }
    }
    match best {
        Some((b, d)) if d <= 2 => b.to_string(),
        _ => String::new(),
    }
}

fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// strings.Fields: words separated by Unicode white space.
pub fn fields(s: &str) -> Vec<&str> {
    s.split(char::is_whitespace).filter(|w| !w.is_empty()).collect()
}

/// path.Clean.
pub fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let b = p.as_bytes();
    let rooted = b[0] == b'/';
    let n = b.len();
    // Go's lazybuf: w is the length written; a byte at w may be read.
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let mut w = 0;
    let append = |out: &mut Vec<u8>, w: &mut usize, c: u8| {
        out.truncate(*w);
        out.push(c);
        *w += 1;
    };
    let (mut r, mut dotdot) = (0, 0);
    if rooted {
        append(&mut out, &mut w, b'/');
        r = 1;
        dotdot = 1;
    }
    while r < n {
        if b[r] == b'/' {
            r += 1;
        } else if b[r] == b'.' && (r + 1 == n || b[r + 1] == b'/') {
            r += 1;
        } else if b[r] == b'.' && b[r + 1] == b'.' && (r + 2 == n || b[r + 2] == b'/') {
            r += 2;
            if w > dotdot {
                w -= 1;
                while w > dotdot && out[w] != b'/' {
                    w -= 1;
                }
            } else if !rooted {
                if w > 0 {
                    append(&mut out, &mut w, b'/');
                }
                append(&mut out, &mut w, b'.');
                append(&mut out, &mut w, b'.');
                dotdot = w;
            }
        } else {
            if rooted && w != 1 || !rooted && w != 0 {
                append(&mut out, &mut w, b'/');
            }
            while r < n && b[r] != b'/' {
                append(&mut out, &mut w, b[r]);
                r += 1;
            }
        }
    }
    if w == 0 {
        return ".".to_string();
    }
    out.truncate(w);
    String::from_utf8(out).unwrap_or_default()
}

/// path.Join of two elements.
pub fn path_join(a: &str, b: &str) -> String {
    if a.is_empty() && b.is_empty() {
        return String::new();
    }
    if a.is_empty() {
        return path_clean(b);
    }
    if b.is_empty() {
        return path_clean(a);
    }
    path_clean(&format!("{}/{}", a, b))
}

/// path.Base.
pub fn path_base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    // Byte loops: rfind's memrchr costs more than these short names.
    let b = p.as_bytes();
    let mut end = b.len();
    while end > 0 && b[end - 1] == b'/' {
        end -= 1;
    }
    if end == 0 {
        return "/";
    }
    let mut start = end;
    while start > 0 && b[start - 1] != b'/' {
        start -= 1;
    }
    &p[start..end]
}

pub fn is_abs(p: &str) -> bool {
    p.starts_with('/')
}

pub struct BadPattern;

/// path.Match.
pub fn path_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    let mut pattern = pattern.as_bytes();
    let mut name = name.as_bytes();
    'pat: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            return Ok(!name.contains(&b'/'));
        }
        let r = match_chunk(chunk, name);
        if let Ok(Some(t)) = r {
            if t.is_empty() || !pattern.is_empty() {
                name = t;
                continue;
            }
        }
        r?;
        if star {
            let mut i = 0;
            while i < name.len() && name[i] != b'/' {
                match match_chunk(chunk, &name[i + 1..]) {
                    Ok(Some(t)) => {
                        if pattern.is_empty() && !t.is_empty() {
                            i += 1;
                            continue;
                        }
                        name = t;
                        continue 'pat;
                    }
                    Ok(None) => {}
                    Err(e) => return Err(e),
                }
                i += 1;
            }
        }
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, b"")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

fn scan_chunk(mut p: &[u8]) -> (bool, &[u8], &[u8]) {
    let mut star = false;
    while !p.is_empty() && p[0] == b'*' {
        p = &p[1..];
        star = true;
    }
    let mut inrange = false;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'\\' => {
                if i + 1 < p.len() {
                    i += 1;
                }
            }
            b'[' => inrange = true,
            b']' => inrange = false,
            b'*' if !inrange => return (star, &p[..i], &p[i..]),
            _ => {}
        }
        i += 1;
    }
    (star, p, &[])
}

fn decode_rune(s: &[u8]) -> (u32, usize) {
    if s.is_empty() {
        return (0xFFFD, 0);
    }
    let end = s.len().min(4);
    match std::str::from_utf8(&s[..end]) {
        Ok(t) => {
            let c = t.chars().next().unwrap();
            (c as u32, c.len_utf8())
        }
        Err(e) if e.valid_up_to() > 0 => {
            let c = std::str::from_utf8(&s[..e.valid_up_to()]).unwrap().chars().next().unwrap();
            (c as u32, c.len_utf8())
        }
        Err(_) => (0xFFFD, 1),
    }
}

fn match_chunk<'a>(mut chunk: &[u8], mut s: &'a [u8]) -> Result<Option<&'a [u8]>, BadPattern> {
    let mut failed = false;
    while !chunk.is_empty() {
        failed = failed || s.is_empty();
        match chunk[0] {
            b'[' => {
                let mut r = 0u32;
                if !failed {
                    let (c, n) = decode_rune(s);
                    r = c;
                    s = &s[n..];
                }
                chunk = &chunk[1..];
                let mut negated = false;
                if !chunk.is_empty() && chunk[0] == b'^' {
                    negated = true;
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut nrange = 0;
                loop {
                    if !chunk.is_empty() && chunk[0] == b']' && nrange > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk[0] == b'-' {
                        let (h, rest) = get_esc(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    matched = matched || lo <= r && r <= hi;
                    nrange += 1;
                }
                failed = failed || matched == negated;
            }
            b'?' => {
                if !failed {
                    failed = s[0] == b'/';
                    let (_, n) = decode_rune(s);
                    s = &s[n..];
                }
                chunk = &chunk[1..];
            }
            c => {
                let mut c = c;
                if c == b'\\' {
                    chunk = &chunk[1..];
                    if chunk.is_empty() {
                        return Err(BadPattern);
                    }
                    c = chunk[0];
                }
                if !failed {
                    failed = c != s[0];
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
        }
    }
    if failed {
        return Ok(None);
    }
    Ok(Some(s))
}

fn get_esc(mut chunk: &[u8]) -> Result<(u32, &[u8]), BadPattern> {
    if chunk.is_empty() || chunk[0] == b'-' || chunk[0] == b']' {
        return Err(BadPattern);
    }
    if chunk[0] == b'\\' {
        chunk = &chunk[1..];
        if chunk.is_empty() {
            return Err(BadPattern);
        }
    }
    let (r, n) = decode_rune(chunk);
    let bad = r == 0xFFFD && n == 1;
    let rest = &chunk[n..];
    if bad || rest.is_empty() {
        return Err(BadPattern);
    }
    Ok((r, rest))
}

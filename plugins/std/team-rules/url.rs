// The host of a URL as Go's net/url.Parse and URL.Hostname find it, with
// the same refusals (the Go team-rules decides on them).

/// url.Parse(raw) then Hostname(): Err when Parse fails, Ok("") when the
/// URL has no authority.
pub fn hostname(raw: &str) -> Result<Vec<u8>, ()> {
    let u = raw.split('#').next().unwrap_or("");
    let frag = if u.len() < raw.len() { &raw[u.len() + 1..] } else { "" };
    let host = parse(u)?;
    if !frag.is_empty() {
        unescape(frag.as_bytes(), Mode::Other)?;
    }
    Ok(split_host_port(&host))
}

#[derive(PartialEq, Clone, Copy)]
enum Mode {
    Host,
    Zone,
    Other,
}

fn parse(raw: &str) -> Result<Vec<u8>, ()> {
    let b = raw.as_bytes();
    if b.iter().any(|&c| c < b' ' || c == 0x7f) {
        return Err(());
    }
    if raw == "*" {
        return Ok(Vec::new());
    }
    let (scheme, rest) = get_scheme(raw)?;
    let scheme = scheme.to_ascii_lowercase();
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 { &rest[..rest.len() - 1] } else { rest.split('?').next().unwrap_or("") };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            return Ok(Vec::new()); // opaque
        }
        if rest.split('/').next().unwrap_or("").contains(':') {
            return Err(());
        }
    }
    let mut host = Vec::new();
    let mut path = rest;
    if (!scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let mut authority = &rest[2..];
        path = "";
        if let Some(i) = authority.find('/') {
            path = &authority[i..];
            authority = &authority[..i];
        }
        host = parse_authority(&scheme, authority)?;
    }
    unescape(path.as_bytes(), Mode::Other)?;
    Ok(host)
}

fn get_scheme(raw: &str) -> Result<(&str, &str), ()> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err(());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(scheme: &str, authority: &str) -> Result<Vec<u8>, ()> {
    let (userinfo, hostpart) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(scheme, hostpart)?;
    if let Some(u) = userinfo {
        for c in u.chars() {
            if !(c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c)) {
                return Err(());
            }
        }
        for part in u.splitn(2, ':') {
            unescape(part.as_bytes(), Mode::Other)?;
        }
    }
    Ok(host)
}

fn valid_optional_port(p: &[u8]) -> bool {
    p.is_empty() || p[0] == b':' && p[1..].iter().all(|c| c.is_ascii_digit())
}

fn parse_host(scheme: &str, host: &str) -> Result<Vec<u8>, ()> {
    let hb = host.as_bytes();
    match host.rfind('[') {
        Some(i) if i > 0 => return Err(()),
        Some(_) => {
            let close = host.rfind(']').ok_or(())?;
            let colon_port = &hb[close + 1..];
            if !valid_optional_port(colon_port) {
                return Err(());
            }
            let port = unescape(colon_port, Mode::Host)?;
            let name = &host[1..close];
            let unescaped = match name.find("%25") {
                Some(z) => {
                    let mut h = unescape(name[..z].as_bytes(), Mode::Host)?;
                    h.extend(unescape(name[z..].as_bytes(), Mode::Zone)?);
                    h
                }
                None => unescape(name.as_bytes(), Mode::Host)?,
            };
            if !is_ipv6(&unescaped) {
                return Err(());
            }
            let mut out = b"[".to_vec();
            out.extend(unescaped);
            out.push(b']');
            out.extend(port);
            return Ok(out);
        }
        None => {}
    }
    if let Some(i) = host.find(':') {
        let last = host.rfind(':').unwrap();
        // Go 1.26 is strict about a second colon for http and https only.
        let i = if last != i && !(scheme == "http" || scheme == "https") { last } else { i };
        if !valid_optional_port(&hb[i..]) {
            return Err(());
        }
    }
    unescape(hb, Mode::Host)
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// The ASCII bytes Go allows unescaped in a host.
fn host_ok(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!\"$&'()*+,-.:;<=>[]_~".contains(&c)
}

fn unescape(s: &[u8], mode: Mode) -> Result<Vec<u8>, ()> {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                if i + 2 >= s.len() || !s[i + 1].is_ascii_hexdigit() || !s[i + 2].is_ascii_hexdigit() {
                    return Err(());
                }
                if mode == Mode::Host && unhex(s[i + 1]) < 8 && &s[i..i + 3] != b"%25" {
                    return Err(());
                }
                if mode == Mode::Zone {
                    let v = unhex(s[i + 1]) << 4 | unhex(s[i + 2]);
                    if &s[i..i + 3] != b"%25" && v != b' ' && (v >= 0x80 || !host_ok(v)) {
                        return Err(());
                    }
                }
                i += 3;
            }
            c => {
                if (mode == Mode::Host || mode == Mode::Zone) && c < 0x80 && !host_ok(c) {
                    return Err(());
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            out.push(unhex(s[i + 1]) << 4 | unhex(s[i + 2]));
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Ok(out)
}

fn split_host_port(h: &[u8]) -> Vec<u8> {
    let mut host = h;
    if let Some(colon) = host.iter().rposition(|&c| c == b':') {
        if valid_optional_port(&host[colon..]) {
            host = &host[..colon];
        }
    }
    if host.len() >= 2 && host[0] == b'[' && host[host.len() - 1] == b']' {
        host = &host[1..host.len() - 1];
    }
    host.to_vec()
}

/// netip.ParseAddr succeeding on an IPv6 address (with an optional zone).
fn is_ipv6(s: &[u8]) -> bool {
    let s = match std::str::from_utf8(s) {
        Ok(s) => s,
        Err(_) => return false,
    };
    if !s.contains(':') {
        return false; // an IPv4 literal in brackets, or nothing
    }
    let (addr, zone) = match s.find('%') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    if zone == Some("") {
        return false;
    }
    let mut groups = 0;
    let mut ellipsis = false;
    let mut rest = addr;
    if rest.starts_with("::") {
        ellipsis = true;
        rest = &rest[2..];
        if rest.is_empty() {
            return true;
        }
    }
    loop {
        // One group: up to 4 hex digits, or an IPv4 tail.
        let end = rest.find(':').unwrap_or(rest.len());
        let g = &rest[..end];
        if g.contains('.') {
            if end != rest.len() || !is_ipv4(g) {
                return false;
            }
            groups += 2;
            break;
        }
        if g.is_empty() || g.len() > 4 || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
        groups += 1;
        if end == rest.len() {
            break;
        }
        rest = &rest[end + 1..];
        if rest.starts_with(':') {
            if ellipsis {
                return false;
            }
            ellipsis = true;
            rest = &rest[1..];
            if rest.is_empty() {
                break;
            }
        } else if rest.is_empty() {
            return false;
        }
        if groups > 8 {
            return false;
        }
    }
    if ellipsis {
        groups < 8
    } else {
        groups == 8
    }
}

fn is_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|c| c.is_ascii_digit()) && !(p.len() > 1 && p.starts_with('0')) && p.parse::<u32>().map(|v| v <= 255).unwrap_or(false))
}

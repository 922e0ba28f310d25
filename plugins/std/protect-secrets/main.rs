// protect-secrets: rejects any tool call reading or writing a protected
// file (by default .env files, keys and ~/.ssh), wherever the call names
// it, and abstains otherwise. The reference implementation, with the same
// behaviour, is the Go example in plugins/examples/protect-secrets.
#[path = "../common/mod.rs"]
mod common;

use common::text::{is_abs, path_clean, path_join, path_match, quote};
use common::{Decision, Field, Request};

const DEFAULT_GLOBS: &[&str] = &[
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "~/.ssh/**", "~/.aws/credentials", "~/.netrc",
    "~/.gnupg/**",
];

fn decide(req: &Request) -> Result<Decision, String> {
    let (mut globs, mut paths, mut home_key) = (None, None, false);
    if let Some(cfg) = req.config() {
        let f = common::decode_struct(&cfg, "config", "main.config", &[("globs", Field::StrList), ("paths", Field::StrList), ("home", Field::RawPtr)])
            .map_err(common::config_err)?;
        globs = common::str_list(f[0]);
        paths = common::str_list(f[1]);
        home_key = f[2].is_some();
    }
    if home_key {
        return Err("home is no longer a config key: permhost tells the plugin the user's home directory (session.home)".into());
    }
    let home = if is_abs(&req.session.home) { path_clean(&req.session.home) } else { String::new() };
    let list: Vec<String> = if globs.is_none() && paths.is_none() {
        DEFAULT_GLOBS.iter().map(|s| s.to_string()).collect()
    } else {
        globs.unwrap_or_default().into_iter().chain(paths.unwrap_or_default()).collect()
    };
    let mut patterns = Vec::with_capacity(list.len());
    for g in list {
        patterns.push(compile(g)?);
    }
    for c in candidates(req) {
        for p in &patterns {
            if p.matches(&c, &home) {
                return Ok(Decision::with(
                    "reject",
                    format!("protect-secrets: {} matches protected pattern {}", common::text::clean(&c.shown, 200), quote(&p.glob)),
                ));
            }
        }
    }
    Ok(Decision::abstain())
}

// ---- candidates.go ----

#[derive(Default)]
struct Candidate {
    path: String,
    cwd: String,
    shown: String,
}

fn candidates(req: &Request) -> Vec<Candidate> {
    let mut cwd = req.session.cwd.as_str();
    let named: Vec<String> = match &req.action {
        Some(a) => {
            if a.cwd.starts_with('/') {
                cwd = &a.cwd;
            }
            a.paths.clone()
        }
        None => req.tool_call.locations.clone(),
    };
    let mut out: Vec<Candidate> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let add = |word: &str, out: &mut Vec<Candidate>, seen: &mut Vec<String>| {
        for w in variants(word) {
            let c = resolve(w, cwd);
            if c.path.is_empty() || seen.contains(&c.path) {
                continue;
            }
            seen.push(c.path.clone());
            out.push(c);
        }
    };
    for p in &req.paths {
        add(&p.path, &mut out, &mut seen);
        let r = &p.resolved;
        if r.starts_with('/') && !seen.contains(&path_clean(r)) {
            seen.push(path_clean(r));
            out.push(Candidate { path: path_clean(r), cwd: cwd.to_string(), shown: format!("{} (opens {})", p.path, r) });
        }
    }
    for p in &named {
        add(p, &mut out, &mut seen);
    }
    if let Some(s) = &req.shell {
        for c in &s.commands {
            for w in &c.argv {
                add(w, &mut out, &mut seen);
            }
            for r in &c.redirects {
                add(&r.target, &mut out, &mut seen);
            }
            for (_, v) in &c.assignments {
                add(v, &mut out, &mut seen);
            }
        }
    }
    let text = common::command_text(req);
    for w in text.split(|c: char| " \t\r\n;&|<>()`'\"".contains(c)).filter(|w| !w.is_empty()) {
        add(w, &mut out, &mut seen);
    }
    out
}

fn variants(word: &str) -> Vec<&str> {
    let word = word.trim_matches(char::is_whitespace);
    if word.is_empty() {
        return Vec::new();
    }
    let mut out = vec![word];
    if let Some(i) = word.rfind('=') {
        if i + 1 < word.len() {
            out.push(&word[i + 1..]);
        }
    }
    out
}

fn resolve(w: &str, cwd: &str) -> Candidate {
    let mut c = Candidate { shown: w.to_string(), ..Default::default() };
    let mut w = w.to_string();
    for h in ["$HOME", "${HOME}"] {
        if let Some(rest) = w.strip_prefix(h) {
            if rest.is_empty() || rest.starts_with('/') {
                w = format!("~{}", rest);
            }
        }
    }
    if let Some(rest) = w.strip_prefix("file://") {
        c.path = path_clean(rest);
    } else if w.starts_with('/') {
        c.path = path_clean(&w);
    } else if w == "~" || w.starts_with("~/") {
        c.path = format!("~/{}", path_clean(&w[1..]).trim_start_matches('/'));
    } else if w.starts_with('-') && !w.contains('/') && !w.contains('.') {
        return Candidate::default();
    } else if !cwd.is_empty() {
        c.path = path_join(cwd, &w);
    } else {
        c.path = path_clean(&w);
    }
    c.cwd = cwd.to_string();
    c
}

// ---- glob.go ----

#[derive(PartialEq)]
enum Kind {
    AnySegment,
    FromHome,
    Absolute,
    FromCwd,
}

struct Pattern {
    glob: String,
    kind: Kind,
    segs: Vec<String>,
}

fn compile(glob: String) -> Result<Pattern, String> {
    let g: &str = &glob;
    let (kind, rest) = if g.is_empty() || g == "~" || g == "/" {
        return Err(format!("protect-secrets: glob {} would protect everything or nothing", quote(&glob)));
    } else if let Some(r) = g.strip_prefix("~/") {
        (Kind::FromHome, r)
    } else if let Some(r) = g.strip_prefix('/') {
        (Kind::Absolute, r)
    } else if g.strip_suffix('/').unwrap_or(g).contains('/') {
        (Kind::FromCwd, g)
    } else {
        (Kind::AnySegment, g)
    };
    let segs = split(rest);
    for s in &segs {
        if path_match(s, "").is_err() {
            return Err(format!("protect-secrets: glob {}: syntax error in pattern", quote(&glob)));
        }
    }
    Ok(Pattern { segs, kind, glob })
}

fn split(p: &str) -> Vec<String> {
    p.split('/').filter(|s| !s.is_empty() && *s != ".").map(|s| s.to_string()).collect()
}

fn pm(p: &str, n: &str) -> bool {
    matches!(path_match(p, n), Ok(true))
}

impl Pattern {
    fn matches(&self, c: &Candidate, home: &str) -> bool {
        match self.kind {
            Kind::AnySegment => split(&c.path).iter().any(|s| pm(&self.segs[0], s)),
            Kind::Absolute => c.path.starts_with('/') && match_segs(&self.segs, &split(&c.path)),
            Kind::FromHome => match under_home(&c.path, home) {
                Some(rest) => match_segs(&self.segs, &split(rest)),
                None => false,
            },
            Kind::FromCwd => {
                if c.cwd.is_empty() || !c.path.starts_with('/') {
                    return !c.path.starts_with('/') && !c.path.starts_with('~') && match_segs(&self.segs, &split(&c.path));
                }
                let prefix = format!("{}/", c.cwd.strip_suffix('/').unwrap_or(&c.cwd));
                match c.path.strip_prefix(prefix.as_str()) {
                    Some(rest) => match_segs(&self.segs, &split(rest)),
                    None => false,
                }
            }
        }
    }
}

fn under_home<'a>(p: &'a str, home: &str) -> Option<&'a str> {
    if let Some(rest) = p.strip_prefix("~/") {
        return Some(rest);
    }
    if p == "~" {
        return Some("");
    }
    if !home.is_empty() {
        let prefix = format!("{}/", home.strip_suffix('/').unwrap_or(home));
        return p.strip_prefix(prefix.as_str());
    }
    if let Some(rest) = p.strip_prefix("/root/") {
        return Some(rest);
    }
    for base in ["/home/", "/Users/"] {
        if let Some(rest) = p.strip_prefix(base) {
            if let Some(i) = rest.find('/') {
                if i > 0 {
                    return Some(&rest[i + 1..]);
                }
            }
        }
    }
    None
}

fn match_segs(pat: &[String], segs: &[String]) -> bool {
    let (mut pat, mut segs) = (pat, segs);
    while !pat.is_empty() {
        if pat[0] == "**" {
            for i in 0..=segs.len() {
                if match_segs(&pat[1..], &segs[i..]) {
                    return true;
                }
            }
            return false;
        }
        if segs.is_empty() || !pm(&pat[0], &segs[0]) {
            return false;
        }
        pat = &pat[1..];
        segs = &segs[1..];
    }
    true
}

plugin!(
    "protect-secrets",
    common::encode_info(
        "protect-secrets",
        "1.0.0",
        "Rejects reads and writes of files matching protected globs (.env, *.pem, id_rsa, ~/.ssh/** by default).",
        &["globs", "paths"]
    ),
    decide,
    common::no_check
);

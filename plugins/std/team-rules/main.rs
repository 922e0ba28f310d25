// team-rules: a team's allow, reject and ask rules over action families,
// tool kinds, command prefixes, path globs and URL domains, from the
// plugin's [plugin.config] (README.md has the rule language). The
// reference implementation, with the same behaviour, is the Go example in
// plugins/examples/team-rules.
#[path = "../common/mod.rs"]
mod common;
mod url;

use common::json::{self, Json};
use common::text::{fields, go_quote, is_abs, path_base, path_clean, path_join, path_match, quote, quote_list};
use common::{Command, DecErr, Decision, Field, Problem, Redirect, Request};
use std::rc::Rc;

const NAME: &str = "team-rules";

// ---- config.go ----

#[derive(Clone)]
struct Rule {
    index: usize,
    action: &'static str,
    families: Vec<String>,
    kinds: Vec<String>,
    tools: Vec<String>,
    commands: Vec<Prefix>,
    into: Vec<Prefix>,
    paths: Vec<String>,
    access: String,
    domains: Vec<String>,
    note: String,
}

/// A command prefix of a rule, with what matching it needs made once: the
/// base name of its program.
#[derive(Clone)]
struct Prefix {
    words: Vec<String>,
    base: String,
}

impl Prefix {
    fn new(words: Vec<String>) -> Prefix {
        let base = path_base(&words[0]).to_string();
        Prefix { words, base }
    }
}

const FAMILIES: &[&str] = &["shell", "edit", "read", "delete", "move", "fetch", "search", "mcp", "switch_mode", "other"];
const TOOL_KINDS: &[&str] = &["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"];

const RULE_FIELDS: &[(&str, Field)] = &[
    ("action", Field::Str),
    ("family", Field::Raw),
    ("kind", Field::Raw),
    ("tool", Field::Raw),
    ("command", Field::Raw),
    ("piped_into", Field::Raw),
    ("paths", Field::StrList),
    ("access", Field::Str),
    ("domains", Field::StrList),
    ("reason", Field::Str),
];

const HOME_MSG: &str = "home is no longer a config key: permhost tells the plugin the user's home directory (session.home)";

/// parseConfig: the rules, or the error after "bad config: ".
fn parse_config(raw: Option<&Json>) -> Result<Vec<Rule>, String> {
    let raw = match raw {
        None | Some(Json::Null) => return Ok(Vec::new()),
        Some(r) => r,
    };
    let f = common::decode_struct(raw, "rawConfig", "main.rawConfig", &[("home", Field::RawPtr), ("rules", Field::RawList)]).map_err(|e| e.go())?;
    if f[0].is_some() {
        return Err(HOME_MSG.to_string());
    }
    let mut rules = Vec::new();
    if let Some(Json::Arr(list)) = f[1] {
        for (i, r) in list.iter().enumerate() {
            let rr = decode_rule(r).map_err(|e| format!("rules[{}]: {}", i, e.go()))?;
            rules.push(validate(&rr, i).map_err(|e| format!("rules[{}]: {}", i, e))?);
        }
    }
    Ok(rules)
}

struct RawRule<'a> {
    action: String,
    family: Option<&'a Json>,
    kind: Option<&'a Json>,
    tool: Option<&'a Json>,
    command: Option<&'a Json>,
    piped_into: Option<&'a Json>,
    paths: Option<Vec<String>>,
    access: String,
    domains: Option<Vec<String>>,
    reason: String,
}

fn decode_rule(r: &Json) -> Result<RawRule<'_>, DecErr> {
    let f = common::decode_struct(r, "rawRule", "main.rawRule", RULE_FIELDS)?;
    Ok(RawRule {
        action: common::str_field(f[0]),
        family: f[1],
        kind: f[2],
        tool: f[3],
        command: f[4],
        piped_into: f[5],
        paths: common::str_list(f[6]),
        access: common::str_field(f[7]),
        domains: common::str_list(f[8]),
        reason: common::str_field(f[9]),
    })
}

fn validate(rr: &RawRule, index: usize) -> Result<Rule, String> {
    let action = match rr.action.as_str() {
        "allow" => "allow",
        "reject" => "reject",
        "ask" => "ask",
        "" => return Err("action is missing (want \"allow\", \"reject\" or \"ask\")".into()),
        a => return Err(format!("action {} is not \"allow\", \"reject\" or \"ask\"", quote(a))),
    };
    let mut r = Rule {
        index,
        action,
        families: Vec::new(),
        kinds: Vec::new(),
        tools: Vec::new(),
        commands: Vec::new(),
        into: Vec::new(),
        paths: Vec::new(),
        access: String::new(),
        domains: Vec::new(),
        note: rr.reason.trim_matches(char::is_whitespace).to_string(),
    };
    r.families = string_or_list("family", rr.family)?;
    for f in &r.families {
        if !FAMILIES.contains(&f.as_str()) {
            return Err(format!("family {} is not one of shell, edit, read, delete, move, fetch, search, mcp, switch_mode, other", quote(f)));
        }
    }
    r.kinds = string_or_list("kind", rr.kind)?;
    for k in &r.kinds {
        if !TOOL_KINDS.contains(&k.as_str()) {
            return Err(format!("kind {} is not an ACP tool kind", quote(k)));
        }
    }
    r.tools = string_or_list("tool", rr.tool)?;
    r.commands = command_prefixes("command", rr.command)?.into_iter().map(Prefix::new).collect();
    r.into = command_prefixes("piped_into", rr.piped_into)?.into_iter().map(Prefix::new).collect();
    if !r.into.is_empty() {
        if r.action == "allow" {
            return Err("piped_into is for reject and ask rules: an allow must cover every command on its own".into());
        }
        if r.commands.is_empty() {
            return Err("piped_into needs command: what is piped into it".into());
        }
    }
    if let Some(paths) = &rr.paths {
        for p in paths {
            valid_glob(p)?;
            r.paths.push(p.clone());
        }
        if paths.is_empty() {
            return Err("paths is empty".into());
        }
    }
    match rr.access.as_str() {
        "" | "read" | "write" => r.access = rr.access.clone(),
        a => return Err(format!("access {} is not \"read\" or \"write\"", quote(a))),
    }
    if !r.access.is_empty() && r.paths.is_empty() {
        return Err("access needs paths".into());
    }
    if let Some(ds) = &rr.domains {
        if ds.is_empty() {
            return Err("domains is empty".into());
        }
        for d in ds {
            let d = go_lower(d.trim_matches(char::is_whitespace));
            let d = d.strip_suffix('.').unwrap_or(&d).to_string();
            valid_domain(&d)?;
            r.domains.push(d);
        }
    }
    if r.families.len() + r.kinds.len() + r.tools.len() + r.commands.len() + r.paths.len() + r.domains.len() == 0 {
        return Err("states no condition (family, kind, tool, command, paths or domains), so it would match every call".into());
    }
    Ok(r)
}

/// strings.ToLower: Unicode simple lower case.
fn go_lower(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{130}' => 'i',
            c => c.to_lowercase().next().unwrap_or(c),
        })
        .collect()
}

/// json.Unmarshal into []string: Some when every element is a string or null.
fn as_strings(v: &Json) -> Option<Vec<String>> {
    match v {
        Json::Null => Some(Vec::new()),
        Json::Arr(a) => a
            .iter()
            .map(|e| match e {
                Json::Str(s) => Some(s.clone()),
                Json::Null => Some(String::new()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn string_or_list(key: &str, raw: Option<&Json>) -> Result<Vec<String>, String> {
    let raw = match raw {
        None => return Ok(Vec::new()),
        Some(r) => r,
    };
    match raw {
        Json::Null => return Err(format!("{} is empty", key)),
        Json::Str(s) if s.is_empty() => return Err(format!("{} is empty", key)),
        Json::Str(s) => return Ok(vec![s.clone()]),
        _ => {}
    }
    let list = match as_strings(raw) {
        Some(l) => l,
        None => return Err(format!("{} must be a string or a list of strings", key)),
    };
    if list.is_empty() {
        return Err(format!("{} is empty", key));
    }
    if list.iter().any(|s| s.is_empty()) {
        return Err(format!("{} has an empty entry", key));
    }
    Ok(list)
}

fn command_prefixes(key: &str, raw: Option<&Json>) -> Result<Vec<Vec<String>>, String> {
    let raw = match raw {
        None => return Ok(Vec::new()),
        Some(r) => r,
    };
    let many: Vec<Vec<String>> = if let Some(one) = as_strings(raw) {
        if one.is_empty() {
            return Err(format!("{} is empty", key));
        }
        vec![one]
    } else {
        let parsed = match raw {
            Json::Arr(a) => a.iter().map(as_strings).collect::<Option<Vec<_>>>(),
            _ => None,
        };
        match parsed {
            Some(m) => m,
            None => return Err(format!("{} must be a list of words, e.g. [\"npm\", \"test\"], or a list of such lists", key)),
        }
    };
    if many.is_empty() {
        return Err(format!("{} is empty", key));
    }
    for prefix in &many {
        if prefix.is_empty() {
            return Err(format!("{} has an empty prefix", key));
        }
        if prefix.iter().any(|w| w.is_empty()) {
            return Err(format!("{} {} has an empty word", key, quote_list(prefix)));
        }
        if prefix[0].contains(|c| c == ' ' || c == '\t' || c == '\n') {
            return Err(format!("{} {}: give each word separately, e.g. [\"npm\", \"test\"]", key, quote_list(prefix)));
        }
    }
    Ok(many)
}

fn valid_glob(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("paths has an empty glob".into());
    }
    if p.starts_with('~') && p != "~" && !p.starts_with("~/") {
        return Err(format!("path {}: ~user is not supported, only ~ and ~/...", quote(p)));
    }
    for seg in p.split('/') {
        if path_match(seg, "").is_err() {
            return Err(format!("path {}: bad glob segment {}", quote(p), quote(seg)));
        }
    }
    Ok(())
}

fn valid_domain(d: &str) -> Result<(), String> {
    if d.is_empty() {
        return Err("domains has an empty entry".into());
    }
    if d == "*" {
        return Ok(());
    }
    let rest = d.strip_prefix("*.").unwrap_or(d);
    if rest.is_empty() || rest.contains(|c| "*/@ \t\n?#".contains(c)) {
        return Err(format!("domain {}: want a host name, optionally starting with \"*.\"", quote(d)));
    }
    Ok(())
}

// The most recent configuration, by its bytes: an instance serves many
// calls, nearly always with the same config (as the Go plugin's cache).
// The bytes are the request's own (common::parse_request shares them
// between requests with the same config), so the same Rc is the same
// config without comparing.
static mut LAST: Option<(Option<Rc<Vec<u8>>>, Rc<Vec<Rule>>)> = None;

fn cached_config(req: &Request) -> Result<Rc<Vec<Rule>>, String> {
    // One thread: the module is single-threaded wasm, and nothing else
    // touches LAST.
    unsafe {
        if let Some((b, rules)) = &*std::ptr::addr_of!(LAST) {
            let same = match (b, &req.config) {
                (None, None) => true,
                (Some(x), Some(y)) => Rc::ptr_eq(x, y) || x.as_slice() == y.as_slice(),
                _ => false,
            };
            if same {
                return Ok(rules.clone());
            }
        }
    }
    // Kept across calls, so allocated outside the call's arena.
    common::arena::persistent(|| {
        let cfg = req.config();
        let rules = Rc::new(parse_config(cfg.as_ref())?);
        unsafe {
            *std::ptr::addr_of_mut!(LAST) = Some((req.config.clone(), rules.clone()));
        }
        Ok(rules)
    })
}

// ---- check.go ----

fn check_config(input: &[u8]) -> Vec<Problem> {
    if input.iter().all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
        return Vec::new(); // no configuration, as parseConfig
    }
    let raw = json::parse(input);
    let v = match &raw {
        Ok(v) => v,
        Err(_) => return vec![problem("", "is not a table", "")],
    };
    if parse_config(Some(v)).is_ok() {
        return Vec::new();
    }
    let top = match v {
        Json::Obj(_) => v,
        _ => return vec![problem("", "is not a table", "")],
    };
    let mut out = common::unknown_keys(top, "", &["rules", "home"]);
    if top.get("home").is_some() {
        out.push(problem("home", "is no longer a config key: permhost tells the plugin the user's home directory (session.home)", ""));
    }
    let mut rules: &[Json] = &[];
    match top.get("rules") {
        None | Some(Json::Null) => {}
        Some(Json::Arr(a)) => rules = a,
        Some(_) => {
            out.push(problem("rules", "must be a list of tables ([[plugin.config.rules]])", ""));
            return out;
        }
    }
    let keys: Vec<&str> = RULE_FIELDS.iter().map(|(k, _)| *k).collect();
    for (i, r) in rules.iter().enumerate() {
        let prefix = format!("rules[{}]", i);
        let unknown = common::unknown_keys(r, &format!("{}.", prefix), &keys);
        let n = unknown.len();
        out.extend(unknown);
        if n > 0 {
            continue;
        }
        match decode_rule(r) {
            Err(e) => out.push(problem(&prefix, &json_message(&e), "")),
            Ok(rr) => {
                if let Err(e) = validate(&rr, i) {
                    out.push(problem(&prefix, &e, ""));
                }
            }
        }
    }
    if out.is_empty() {
        let e = parse_config(Some(v)).err().unwrap_or_default();
        out.push(problem("", &e, ""));
    }
    out
}

fn problem(key: &str, message: &str, suggestion: &str) -> Problem {
    Problem { key: key.to_string(), message: message.to_string(), suggestion: suggestion.to_string() }
}

fn json_message(e: &DecErr) -> String {
    if e.unknown.is_empty() && !e.field.is_empty() {
        let t = match e.ty.as_str() {
            "string" => "a string",
            t if t.starts_with("[]") => "a list",
            t => t,
        };
        return format!("{} must be {}, not {}", e.field, t, e.value);
    }
    e.go()
}

// ---- decide.go ----

fn decide(req: &Request) -> Result<Decision, String> {
    let rules = cached_config(req).map_err(|e| format!("bad config: {}", e))?;
    let mut c = Call::new(req, &rules);
    for action in ["reject", "ask"] {
        for r in rules.iter() {
            if r.action != action {
                continue;
            }
            if let Some(what) = c.matches_any(r) {
                return Ok(Decision::with(r.action, reason(r.action, &[r], &what)));
            }
        }
    }
    let (refs, blocker) = c.allowed_by(rules.as_slice());
    if !refs.is_empty() {
        if common::narrowest_of_kind(&req.options, "allow_once").is_none() {
            return Ok(abstain(reason("allow", &refs, "would allow, but no allow_once option was offered")));
        }
        return Ok(Decision::with("allow", reason("allow", &refs, "")));
    }
    if !blocker.is_empty() {
        return Ok(abstain(format!("{}: no rule decides: {}", NAME, blocker)));
    }
    Ok(abstain(format!("{}: no rule matches", NAME)))
}

fn quoted(s: &str) -> String {
    if s.len() > 200 {
        let mut b = s.as_bytes()[..200].to_vec();
        b.extend_from_slice("…".as_bytes());
        return go_quote(&b);
    }
    quote(s)
}

fn abstain(why: String) -> Decision {
    Decision::with("abstain", why)
}

fn reason(action: &str, rules: &[&Rule], what: &str) -> String {
    let mut b = format!("{}: ", NAME);
    for (i, r) in rules.iter().enumerate() {
        if i > 0 {
            b.push_str(", ");
        }
        b.push_str(&format!("rules[{}]", r.index));
    }
    b.push_str(&format!(" ({})", action));
    if !what.is_empty() {
        b.push_str(": ");
        b.push_str(what);
    }
    for r in rules {
        if !r.note.is_empty() {
            b.push_str("; ");
            b.push_str(&r.note);
        }
    }
    b
}

struct Call<'a> {
    req: &'a Request,
    kind: String,
    family: String,
    paths: Vec<Touched>,
    urls: Option<Vec<FoundUrl>>,
    /// The command lines of the parsed script (each command's argv, then
    /// its wrappers), made on first use; argv_at[k] is where command k's
    /// argv is among them.
    shell_lines: Option<(Vec<Line>, Vec<usize>)>,
    /// The command lines found in the command's text, made on first use.
    rough_lines: Option<Vec<Line>>,
}

impl<'a> Call<'a> {
    fn new(req: &'a Request, rules: &Rc<Vec<Rule>>) -> Call<'a> {
        let kind = if req.tool_call.kind.is_empty() { "other".to_string() } else { req.tool_call.kind.clone() };
        let home = if is_abs(&req.session.home) { path_clean(&req.session.home) } else { String::new() };
        let family = family_of(req);
        let mut paths = touched_paths(req, &family, &home);
        for t in &mut paths {
            t.segs = split_ranges(&t.path);
        }
        glob_cache_for(rules, home, &req.session.cwd);
        Call { req, kind, family, paths, urls: None, shell_lines: None, rough_lines: None }
    }

    /// The lines of the parsed script (see shell_lines).
    fn shell_lines(&mut self) -> &(Vec<Line>, Vec<usize>) {
        if self.shell_lines.is_none() {
            let mut lines = Vec::new();
            let mut argv_at = Vec::new();
            if let Some(sh) = &self.req.shell {
                for cmd in &sh.commands {
                    argv_at.push(lines.len());
                    lines.extend(words(cmd).into_iter().map(Line::new));
                }
            }
            self.shell_lines = Some((lines, argv_at));
        }
        self.shell_lines.as_ref().unwrap()
    }

    fn rough_lines(&mut self) -> &Vec<Line> {
        if self.rough_lines.is_none() {
            self.rough_lines = Some(rough_commands(&common::command_text(self.req)).into_iter().map(Line::new).collect());
        }
        self.rough_lines.as_ref().unwrap()
    }

    fn mentioned_urls(&mut self) -> &Vec<FoundUrl> {
        if self.urls.is_none() {
            self.urls = Some(urls_of(self.req));
        }
        self.urls.as_ref().unwrap()
    }

    fn matches_any(&mut self, r: &Rule) -> Option<String> {
        let mut what: Vec<String> = Vec::new();
        if !r.families.is_empty() {
            if !r.families.contains(&self.family) {
                return None;
            }
            what.push(format!("family {}", self.family));
        }
        if !r.kinds.is_empty() {
            if !r.kinds.contains(&self.kind) {
                return None;
            }
            what.push(format!("kind {}", self.kind));
        }
        if !r.tools.is_empty() {
            if !r.tools.contains(&self.req.tool_call.tool_name) {
                return None;
            }
            what.push(format!("tool {}", self.req.tool_call.tool_name));
        }
        if !r.into.is_empty() {
            let (from, into) = self.piped_into(&r.commands, &r.into)?;
            what.push(format!("command {} piped into {}", quoted(&from.join(" ")), quoted(&into.join(" "))));
        } else if !r.commands.is_empty() {
            let argv = self.command_mentioning(&r.commands)?;
            what.push(format!("command {}", quoted(&argv.join(" "))));
        }
        if !r.paths.is_empty() {
            let p = self.path_matching(r, false)?;
            what.push(format!("path {}", quoted(&p)));
        }
        if !r.domains.is_empty() {
            let u = self.url_matching(&r.domains)?;
            what.push(format!("url {}", quoted(&u)));
        }
        Some(what.join(", "))
    }

    fn command_mentioning(&mut self, prefixes: &[Prefix]) -> Option<Vec<String>> {
        if let Some(l) = self.shell_lines().0.iter().find(|l| l.mentions_any(prefixes)) {
            return Some(l.argv.clone());
        }
        if self.req.shell.as_ref().map(|s| !s.parsed).unwrap_or(true) {
            return self.rough_lines().iter().find(|l| l.mentions_any(prefixes)).map(|l| l.argv.clone());
        }
        None
    }

    fn piped_into(&mut self, from: &[Prefix], into: &[Prefix]) -> Option<(Vec<String>, Vec<String>)> {
        let sh = self.req.shell.as_ref();
        let mut placed = sh.map(|s| s.parsed).unwrap_or(false);
        if let Some(sh) = sh {
            for cmd in &sh.commands {
                placed = placed && cmd.pipeline > 0 && cmd.stage > 0;
            }
        }
        if placed {
            let sh = sh.unwrap();
            let (lines, argv_at) = self.shell_lines();
            for (i, a) in sh.commands.iter().enumerate() {
                if !lines[argv_at[i]].mentions_any(from) {
                    continue;
                }
                for (j, b) in sh.commands.iter().enumerate() {
                    if common::feeds(a, b) && lines[argv_at[j]].mentions_any(into) {
                        return Some((a.argv.clone(), b.argv.clone()));
                    }
                }
            }
            return None;
        }
        self.shell_lines();
        self.rough_lines();
        let lines = self.shell_lines.as_ref().unwrap().0.iter().chain(self.rough_lines.as_ref().unwrap().iter());
        let (mut a, mut b): (Option<&Line>, Option<&Line>) = (None, None);
        for l in lines {
            if a.is_none() && l.mentions_any(from) {
                a = Some(l);
            } else if b.is_none() && l.mentions_any(into) {
                b = Some(l);
            }
        }
        match (a, b) {
            (Some(a), Some(b)) => Some((a.argv.clone(), b.argv.clone())),
            _ => None,
        }
    }

    fn path_matching(&mut self, r: &Rule, allow: bool) -> Option<String> {
        let globs = rule_globs(r);
        self.paths.iter().find(|t| path_matches(t, &globs, &r.access, allow)).map(|t| t.path.clone())
    }

    fn url_matching(&mut self, domains: &[String]) -> Option<String> {
        for u in self.mentioned_urls() {
            for d in domains {
                if !u.host.is_empty() && domain_matches(d, &u.host) || u.host.is_empty() && mentions_domain(d, &u.raw) {
                    return Some(u.raw.clone());
                }
            }
        }
        None
    }

    fn applies(&mut self, r: &Rule) -> bool {
        if !r.families.is_empty() && !r.families.contains(&self.family) {
            return false;
        }
        if !r.kinds.is_empty() && !r.kinds.contains(&self.kind) {
            return false;
        }
        if !r.tools.is_empty() && !r.tools.contains(&self.req.tool_call.tool_name) {
            return false;
        }
        if !r.paths.is_empty() {
            if self.paths.is_empty() && self.req.shell.is_none() {
                return false;
            }
            let globs = rule_globs(r);
            if !self.paths.iter().all(|t| path_matches(t, &globs, &r.access, true)) {
                return false;
            }
        }
        if !r.domains.is_empty() {
            let urls = self.mentioned_urls();
            if urls.is_empty() {
                return false;
            }
            for u in urls {
                if u.host.is_empty() || !r.domains.iter().any(|d| domain_matches(d, &u.host)) {
                    return false;
                }
            }
        }
        true
    }

    fn allowed_by<'r>(&mut self, rules: &'r [Rule]) -> (Vec<&'r Rule>, String) {
        let mut applying: Vec<&'r Rule> = Vec::new();
        for r in rules {
            if r.action == "allow" && self.applies(r) {
                applying.push(r);
            }
        }
        if applying.is_empty() {
            return (Vec::new(), String::new());
        }
        let sh = match &self.req.shell {
            None => {
                if self.family == "shell" || self.kind == "execute" {
                    return (Vec::new(), "a shell call without a command permhost could analyse".into());
                }
                for r in &applying {
                    if r.commands.is_empty() {
                        return (vec![*r], String::new());
                    }
                }
                return (Vec::new(), String::new());
            }
            Some(sh) => sh,
        };
        if !sh.parsed {
            return (Vec::new(), format!("the script was not fully parsed ({})", sh.reason));
        }
        if sh.commands.is_empty() {
            return (Vec::new(), "the script has no command".into());
        }
        let mut used: Vec<&'r Rule> = Vec::new();
        let use_rule = |r: &'r Rule, used: &mut Vec<&'r Rule>| {
            if !used.iter().any(|u| u.index == r.index) {
                used.push(r);
            }
        };
        for cmd in &sh.commands {
            let b = allow_blocker(cmd);
            if !b.is_empty() {
                return (Vec::new(), b);
            }
            let i = applying.iter().position(|r| r.commands.iter().any(|p| has_prefix(&cmd.argv, &p.words)));
            let i = match i {
                None => return (Vec::new(), uncovered(cmd, rules)),
                Some(i) => i,
            };
            use_rule(applying[i], &mut used);
            for rd in &cmd.redirects {
                if !rd.write || ignored_redirect(rd) {
                    continue;
                }
                match applying.iter().position(|r| !r.paths.is_empty()) {
                    None => {
                        return (Vec::new(), format!("{} writes {}, which no allow rule's paths cover", quoted(&cmd.argv.join(" ")), quoted(&rd.target)));
                    }
                    Some(j) => use_rule(applying[j], &mut used),
                }
            }
        }
        used.sort_by_key(|r| r.index);
        (used, String::new())
    }
}

fn uncovered(cmd: &Command, rules: &[Rule]) -> String {
    for r in rules {
        if r.action == "allow" && r.commands.iter().any(|p| has_prefix(&cmd.argv, &p.words)) {
            return format!("{}: rules[{}] (allow) does not apply to this call (its kind, tool, paths or domains)", quoted(&cmd.argv.join(" ")), r.index);
        }
    }
    format!("{} matches no allow rule", quoted(&cmd.argv.join(" ")))
}

fn family_of(req: &Request) -> String {
    if let Some(a) = &req.action {
        if FAMILIES.contains(&a.family.as_str()) {
            return a.family.clone();
        }
    }
    let k = req.tool_call.kind.as_str();
    match k {
        "execute" => "shell".into(),
        "edit" | "read" | "delete" | "move" | "fetch" | "search" | "switch_mode" => k.into(),
        _ => "other".into(),
    }
}

fn words(cmd: &Command) -> Vec<Vec<String>> {
    let mut out = vec![cmd.argv.clone()];
    for w in &cmd.wrappers {
        out.push(fields(w).iter().map(|s| s.to_string()).collect());
    }
    out
}

/// A command line as rules look for a program in it: each word as
/// same_program compares it, made once per decision.
struct Line {
    argv: Vec<String>,
    /// Per word: where it starts without its leading backslashes, its
    /// base name, and whether it is a pattern in the program's place.
    words: Vec<(usize, String, bool)>,
}

impl Line {
    fn new(argv: Vec<String>) -> Line {
        let words = argv
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let wild = i == 0 && w.bytes().any(|c| matches!(c, b'$' | b'`' | b'*' | b'?' | b'['));
                let trimmed = w.trim_start_matches('\\');
                (w.len() - trimmed.len(), path_base(trimmed).to_string(), wild)
            })
            .collect();
        Line { argv, words }
    }

    fn mentions_any(&self, prefixes: &[Prefix]) -> bool {
        prefixes.iter().any(|p| self.mentions(p))
    }

    /// Whether the line runs p's program, anywhere in it, with p's
    /// arguments after it (same_program and contains_args).
    fn mentions(&self, p: &Prefix) -> bool {
        for (i, (trim, base, wild)) in self.words.iter().enumerate() {
            if !(*wild || self.argv[i][*trim..] == p.words[0] || *base == p.base) {
                continue;
            }
            if contains_args(&self.argv[i + 1..], &p.words[1..]) {
                return true;
            }
        }
        false
    }
}

// ---- command.go ----

const BENIGN_WRAPPERS: &[&str] = &["bash", "sh", "env", "timeout", "nice", "nohup", "command", "time"];

fn allow_blocker(c: &Command) -> String {
    if c.argv.is_empty() {
        return "a command has no words".into();
    }
    if let Some((name, _)) = c.assignments.first() {
        return format!("the assignment {} precedes {}", quoted(&format!("{}=", name)), quoted(&c.argv[0]));
    }
    if c.dynamic {
        return format!("{} depends on values known only when it runs", quoted(&c.argv.join(" ")));
    }
    for w in &c.wrappers {
        let f = fields(w);
        if f.is_empty() || !BENIGN_WRAPPERS.contains(&path_base(f[0])) {
            return format!("{} runs under the wrapper {}", quoted(&c.argv.join(" ")), quoted(w));
        }
    }
    String::new()
}

fn has_prefix(argv: &[String], prefix: &[String]) -> bool {
    argv.len() >= prefix.len() && prefix.iter().zip(argv).all(|(p, a)| p == a)
}

fn contains_args(args: &[String], want: &[String]) -> bool {
    let mut letters = String::new();
    for a in args {
        if is_short_cluster(a) {
            letters.push_str(&a[1..]);
        }
    }
    for w in want {
        if is_short_cluster(w) {
            if !w[1..].chars().all(|r| letters.contains(r)) {
                return false;
            }
            continue;
        }
        let found = args.iter().any(|a| a == w || w.starts_with("--") && a.starts_with(&format!("{}=", w)));
        if !found {
            return false;
        }
    }
    true
}

fn is_short_cluster(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 2 || b[0] != b'-' || b[1] == b'-' {
        return false;
    }
    s[1..].chars().all(|r| r.is_ascii_alphanumeric())
}

fn rough_commands(src: &str) -> Vec<Vec<String>> {
    // Byte by byte: every separator and dropped character is ASCII, so
    // what is kept of a piece stays UTF-8. Dropping "$" before "(" and
    // splitting at "(" is splitting at "$(" as the "(" it was replaced with.
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut piece: Vec<u8> = Vec::new();
    let mut i = 0;
    while i <= b.len() {
        let sep = i == b.len() || matches!(b[i], b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' | b'{' | b'}' | b'`' | b'\n' | b'\r') || b[i] == b'$' && b.get(i + 1) == Some(&b'(');
        if sep {
            if !piece.is_empty() {
                let w = fields(std::str::from_utf8(&piece).unwrap_or_default());
                if !w.is_empty() {
                    out.push(w.iter().map(|s| s.to_string()).collect());
                }
                piece.clear();
            }
            if i < b.len() && b[i] == b'$' {
                i += 1; // the "(" after it
            }
        } else if !matches!(b[i], b'"' | b'\'' | b'\\') {
            piece.push(b[i]);
        }
        i += 1;
    }
    out
}

// ---- match.go ----

const HOME_GLOBS: &[&str] = &["/root", "/home/*", "/Users/*", "~"];

fn expand_glob(g: &str, home: &str, cwd: &str, allow: bool) -> Vec<String> {
    if g == "~" || g.starts_with("~/") {
        let rest = &g[1..];
        if !home.is_empty() {
            return vec![path_clean(&format!("{}{}", home, rest))];
        }
        if allow {
            return Vec::new();
        }
        return HOME_GLOBS.iter().map(|h| path_clean(&format!("{}{}", h, rest))).collect();
    }
    if is_abs(g) {
        return vec![path_clean(g)];
    }
    if !cwd.is_empty() {
        return vec![path_join(cwd, g)];
    }
    if allow {
        return Vec::new();
    }
    vec![format!("**/{}", path_clean(g))]
}

/// A rule's path glob, expanded for a session's home and cwd and split
/// into segments, with what matching needs known once.
struct Glob {
    abs: bool,
    /// Its first segment is "**": it matches relative names too.
    floating: bool,
    segs: Vec<String>,
    /// Per segment: no pattern character, so it matches only itself.
    literal: Vec<bool>,
    /// How many segments are "**".
    stars: usize,
}

impl Glob {
    fn new(g: &str) -> Glob {
        let segs: Vec<String> = split_path(g).into_iter().map(String::from).collect();
        let literal = segs.iter().map(|s| !s.bytes().any(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))).collect();
        let stars = segs.iter().filter(|s| *s == "**").count();
        Glob { abs: is_abs(g), floating: segs.first().map(|s| s == "**").unwrap_or(false), segs, literal, stars }
    }

    fn seg(&self, i: usize, name: &str) -> bool {
        if self.literal[i] {
            self.segs[i] == name
        } else {
            matches!(path_match(&self.segs[i], name), Ok(true))
        }
    }

    /// Whether the glob matches t's path: seg_match, with the shapes
    /// rules mostly have (no "**", or one) matched without its table.
    fn matches(&self, t: &Touched) -> bool {
        if self.abs != is_abs(&t.path) && !self.floating {
            return false;
        }
        let n = t.segs.len();
        let name = |j: usize| &t.path[t.segs[j].0..t.segs[j].1];
        let g = self.segs.len();
        match self.stars {
            0 => n == g && (0..g).all(|i| self.seg(i, name(i))),
            1 => {
                // prefix ** suffix: the prefix matches the first segments,
                // the suffix the last, and ** whatever lies between.
                let star = self.segs.iter().position(|s| s == "**").unwrap_or(0);
                let after = g - star - 1;
                n >= star + after && (0..star).all(|i| self.seg(i, name(i))) && (0..after).all(|k| self.seg(star + 1 + k, name(n - after + k)))
            }
            _ => {
                let ns: Vec<&str> = (0..n).map(name).collect();
                let gs: Vec<&str> = self.segs.iter().map(|s| s.as_str()).collect();
                seg_match(&gs, &ns)
            }
        }
    }
}

/// Each rule's globs for one home and cwd, made on first use and kept
/// across decisions (an instance's sessions rarely change either), for one
/// set of rules.
struct GlobCache {
    rules: Rc<Vec<Rule>>,
    home: String,
    cwd: String,
    by_rule: Vec<Option<Rc<Vec<Glob>>>>,
}

static mut GLOBS: Option<GlobCache> = None;

/// Makes the glob cache the one of rules, home and cwd.
fn glob_cache_for(rules: &Rc<Vec<Rule>>, home: String, cwd: &str) {
    // One thread: the module is single-threaded wasm, and nothing else
    // touches GLOBS.
    unsafe {
        let cache = &mut *std::ptr::addr_of_mut!(GLOBS);
        if let Some(c) = cache {
            if Rc::ptr_eq(&c.rules, rules) && c.home == home && c.cwd == cwd {
                return;
            }
        }
        *cache = None;
        *cache = common::arena::persistent(|| Some(GlobCache { rules: rules.clone(), home: home.clone(), cwd: cwd.to_string(), by_rule: Vec::new() }));
    }
}

/// r's globs, expanded (expand_glob) for the cache's home and cwd.
fn rule_globs(r: &Rule) -> Rc<Vec<Glob>> {
    unsafe {
        let c = (*std::ptr::addr_of_mut!(GLOBS)).as_mut().expect("glob_cache_for first");
        if let Some(Some(g)) = c.by_rule.get(r.index) {
            return g.clone();
        }
        common::arena::persistent(|| {
            let mut out = Vec::new();
            for g in &r.paths {
                out.extend(expand_glob(g, &c.home, &c.cwd, r.action == "allow").iter().map(|s| Glob::new(s)));
            }
            let out = Rc::new(out);
            if c.by_rule.len() <= r.index {
                c.by_rule.resize(r.index + 1, None);
            }
            c.by_rule[r.index] = Some(out.clone());
            out
        })
    }
}

/// The segments of p between its slashes, leading and trailing ones
/// aside.
fn split_path(p: &str) -> Vec<&str> {
    split_ranges(p).into_iter().map(|(a, b)| &p[a..b]).collect()
}

/// split_path, as the ranges of the segments in p.
fn split_ranges(p: &str) -> Vec<(usize, usize)> {
    let b = p.as_bytes();
    let (mut start, mut end) = (0, b.len());
    while start < end && b[start] == b'/' {
        start += 1;
    }
    while end > start && b[end - 1] == b'/' {
        end -= 1;
    }
    let mut out = Vec::new();
    if start == end {
        return out;
    }
    let mut seg = start;
    for i in start..end {
        if b[i] == b'/' {
            out.push((seg, i));
            seg = i + 1;
        }
    }
    out.push((seg, end));
    out
}

fn seg_match(gs: &[&str], ns: &[&str]) -> bool {
    let w = ns.len() + 1;
    let mut memo = vec![0i8; (gs.len() + 1) * w];
    fn m(i: usize, j: usize, gs: &[&str], ns: &[&str], memo: &mut Vec<i8>, w: usize) -> bool {
        let k = i * w + j;
        if memo[k] != 0 {
            return memo[k] > 0;
        }
        let ok = if i == gs.len() {
            j == ns.len()
        } else if gs[i] == "**" {
            m(i + 1, j, gs, ns, memo, w) || (j < ns.len() && m(i, j + 1, gs, ns, memo, w))
        } else if j == ns.len() {
            false
        } else {
            matches!(path_match(gs[i], ns[j]), Ok(true)) && m(i + 1, j + 1, gs, ns, memo, w)
        };
        memo[k] = if ok { 1 } else { -1 };
        ok
    }
    m(0, 0, gs, ns, &mut memo, w)
}

#[derive(Default)]
struct Touched {
    path: String,
    access: String,
    known: bool,
    anywhere: bool,
    /// The path's segments (split_path), set by Call::new.
    segs: Vec<(usize, usize)>,
}

fn touched_paths(req: &Request, family: &str, home: &str) -> Vec<Touched> {
    let cwd = &req.session.cwd;
    let mut out = Vec::new();
    for p in &req.paths {
        let mut t = resolve(&p.path, home, cwd);
        t.access = p.access.clone();
        out.push(t);
        if !p.resolved.is_empty() && p.resolved != p.path {
            let mut r = resolve(&p.resolved, home, cwd);
            r.access = p.access.clone();
            out.push(r);
        }
    }
    let access = match family {
        "read" | "search" => "read",
        "edit" | "delete" | "move" => "write",
        _ => "",
    };
    let named: &[String] = match &req.action {
        Some(a) => &a.paths,
        None => &req.tool_call.locations,
    };
    for p in named {
        let mut t = resolve(p, home, cwd);
        t.access = access.to_string();
        out.push(t);
    }
    if let Some(sh) = &req.shell {
        for c in &sh.commands {
            for r in &c.redirects {
                if ignored_redirect(r) {
                    continue;
                }
                let mut t = resolve(&r.target, home, cwd);
                t.access = if r.write { "write".into() } else { "read".into() };
                out.push(t);
            }
        }
    }
    out
}

fn ignored_redirect(r: &Redirect) -> bool {
    match r.target.as_str() {
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" => return true,
        _ => {}
    }
    r.op.contains('&') && (r.target == "-" || is_digits(&r.target))
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

fn resolve(p: &str, home: &str, cwd: &str) -> Touched {
    if p.is_empty() || p.bytes().any(|c| matches!(c, b'$' | b'`' | b'*' | b'?' | b'[' | b'{')) {
        return Touched { path: p.to_string(), anywhere: true, ..Default::default() };
    }
    if p == "~" || p.starts_with("~/") {
        if home.is_empty() {
            return Touched { path: path_clean(p), ..Default::default() };
        }
        return Touched { path: path_clean(&format!("{}{}", home, &p[1..])), known: true, ..Default::default() };
    }
    if p.starts_with('~') {
        return Touched { path: p.to_string(), anywhere: true, ..Default::default() };
    }
    if is_abs(p) {
        return Touched { path: path_clean(p), known: true, ..Default::default() };
    }
    if !cwd.is_empty() && is_abs(cwd) {
        return Touched { path: path_join(cwd, p), known: true, ..Default::default() };
    }
    Touched { path: p.to_string(), anywhere: true, ..Default::default() }
}

fn path_matches(t: &Touched, globs: &[Glob], access: &str, allow: bool) -> bool {
    if allow && !t.known {
        return false;
    }
    if !allow && t.anywhere && !globs.is_empty() {
        return access_matches(&t.access, access, allow);
    }
    for g in globs {
        if g.matches(t) {
            return access_matches(&t.access, access, allow);
        }
    }
    false
}

fn access_matches(have: &str, want: &str, allow: bool) -> bool {
    if want.is_empty() || have == want {
        return true;
    }
    if have.is_empty() {
        return !allow;
    }
    false
}

struct FoundUrl {
    raw: String,
    host: String,
}

const FETCHERS: &[&str] = &["curl", "wget", "http", "https", "xh", "aria2c"];

fn urls_of(req: &Request) -> Vec<FoundUrl> {
    let mut out = Vec::new();
    if let Some(a) = &req.action {
        for u in &a.urls {
            out.push(parse_url(u, u));
        }
    }
    if let Some(sh) = &req.shell {
        for c in &sh.commands {
            let fetcher = !c.argv.is_empty() && FETCHERS.contains(&path_base(&c.argv[0]));
            for (i, w) in c.argv.iter().enumerate() {
                if w.contains("://") {
                    out.extend(urls_in(w));
                } else if fetcher && i > 0 && !w.starts_with('-') && w.contains('.') {
                    out.push(parse_url(w, &format!("http://{}", w)));
                }
            }
        }
    }
    out
}

fn urls_in(s: &str) -> Vec<FoundUrl> {
    let mut out = Vec::new();
    let mut s = s;
    loop {
        let i = match s.find("://") {
            None => return out,
            Some(i) => i,
        };
        let b = s.as_bytes();
        let mut start = i;
        while start > 0 && is_scheme_byte(b[start - 1]) {
            start -= 1;
        }
        let mut end = i + 3;
        while end < b.len() && !b" \t\r\n\"'<>`()[]{}|;,".contains(&b[end]) {
            end += 1;
        }
        if start < i {
            out.push(parse_url(&s[start..end], &s[start..end]));
        }
        s = &s[end..];
    }
}

fn is_scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.'
}

fn parse_url(raw: &str, as_url: &str) -> FoundUrl {
    let mut f = FoundUrl { raw: raw.to_string(), host: String::new() };
    let host = match url::hostname(as_url) {
        Ok(h) if !h.is_empty() => h,
        _ => return f,
    };
    let lower = go_lower(&lossy(&host));
    let host = lower.trim_end_matches('.');
    if host.is_empty() || host.contains(|c| "\\$`*@%".contains(c)) {
        return f;
    }
    f.host = host.to_string();
    f
}

/// A string of b with each byte of invalid UTF-8 U+FFFD, as Go's string
/// functions read it.
fn lossy(b: &[u8]) -> String {
    let mut out = String::new();
    let mut rest = b;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let n = e.valid_up_to();
                out.push_str(std::str::from_utf8(&rest[..n]).unwrap());
                out.push('\u{FFFD}');
                rest = &rest[n + 1..];
            }
        }
    }
    out
}

fn domain_matches(pattern: &str, host: &str) -> bool {
    if pattern == "*" {
        return !host.is_empty();
    }
    if let Some(suffix) = pattern.strip_prefix('*') {
        if pattern.starts_with("*.") {
            return host.ends_with(suffix);
        }
    }
    host == pattern
}

fn mentions_domain(pattern: &str, raw: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    go_lower(raw).contains(pattern.strip_prefix("*.").unwrap_or(pattern))
}

plugin!(
    NAME,
    common::encode_info(
        NAME,
        "1.0.0",
        "Configured allow, reject and ask rules over tool kind, command prefixes, path globs and URL domains.",
        &["rules"]
    ),
    decide,
    check_config
);

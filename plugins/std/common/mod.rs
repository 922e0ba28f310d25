// The part every standard plugin shares: the Extism host imports, the
// permhost ABI exports, the request as the plugins read it, and the pdk's
// Handle, CheckConfig and DecodeConfig with the Go pdk's exact results
// (plugins/pdk), so that a module here answers what its Go reference
// implementation in plugins/examples answers, byte for byte (the
// differential test there proves it).
#![allow(dead_code)]

pub mod arena;
pub mod json;
mod reader;
pub mod text;

#[global_allocator]
static ALLOC: arena::Arena = arena::Arena;

use json::{Json, Obj};
use std::rc::Rc;

#[link(wasm_import_module = "extism:host/env")]
extern "C" {
    fn input_length() -> u64;
    fn alloc(length: u64) -> u64;
    fn store_u8(offset: u64, byte: u32);
    fn store_u64(offset: u64, value: u64);
    fn error_set(offset: u64);
}

// permhost's own kernel additions (ABI 1.5): the input and the output in
// one call each, where the Extism kernel moves eight bytes a call (313
// calls for a 2.5 KB request, more than the rest of a decision).
#[link(wasm_import_module = "permhost:host/env")]
extern "C" {
    fn input_read(offset: u64, ptr: *mut u8, len: usize);
    fn output_write(ptr: *const u8, len: usize);
}

/// The ABI version the plugins are built for (abi.Current).
pub const ABI: &str = "{\"major\":1,\"minor\":5}";

pub fn input() -> Vec<u8> {
    unsafe {
        let n = input_length() as usize;
        let mut b = Vec::with_capacity(n);
        input_read(0, b.as_mut_ptr(), n);
        b.set_len(n);
        b
    }
}

fn block(b: &[u8]) -> u64 {
    unsafe {
        let off = alloc(b.len() as u64);
        let mut i = 0;
        while i + 8 <= b.len() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            store_u64(off + i as u64, u64::from_le_bytes(w));
            i += 8;
        }
        while i < b.len() {
            store_u8(off + i as u64, b[i] as u32);
            i += 1;
        }
        off
    }
}

pub fn output(s: &str) {
    unsafe { output_write(s.as_ptr(), s.len()) }
}

/// Sets the Extism error; the export then returns 1.
pub fn fail(msg: &str) -> i32 {
    let off = block(msg.as_bytes());
    unsafe { error_set(off) }
    1
}

// ---- The request, as the plugins read it (abi.Request) ----

#[derive(Default)]
pub struct Request {
    pub session: Session,
    pub tool_call: ToolCall,
    pub action: Option<Action>,
    pub options: Vec<Opt>,
    pub shell: Option<Shell>,
    pub paths: Vec<PathEntry>,
    /// The config member's bytes as sent; None when absent. Decoded only
    /// when read ([Request::config]): team-rules compares them first.
    pub config: Option<Rc<Vec<u8>>>,
}

#[derive(Default)]
pub struct Session {
    pub cwd: String,
    pub mode: String,
    pub home: String,
}

#[derive(Default)]
pub struct ToolCall {
    pub title: String,
    pub kind: String,
    pub tool_name: String,
    pub raw_input: Option<Json>,
    pub content: Option<Json>,
    pub locations: Vec<String>,
}

#[derive(Default)]
pub struct Action {
    pub family: String,
    pub command: String,
    pub cwd: String,
    pub paths: Vec<String>,
    pub urls: Vec<String>,
}

#[derive(Default)]
pub struct Opt {
    pub option_id: String,
    pub kind: String,
    pub durable: bool,
    /// None without changes; Some(known) with.
    pub changes: Option<bool>,
}

#[derive(Default)]
pub struct Shell {
    pub source: String,
    pub parsed: bool,
    pub reason: String,
    pub commands: Vec<Command>,
}

#[derive(Default, Clone)]
pub struct Command {
    pub argv: Vec<String>,
    pub wrappers: Vec<String>,
    pub assignments: Vec<(String, String)>,
    pub redirects: Vec<Redirect>,
    pub dynamic: bool,
    pub pipeline: i64,
    pub stage: i64,
}

#[derive(Default, Clone)]
pub struct Redirect {
    pub op: String,
    pub target: String,
    pub write: bool,
}

#[derive(Default)]
pub struct PathEntry {
    pub path: String,
    pub resolved: String,
    pub access: String,
    pub inside_cwd: bool,
}

type R<T> = Result<T, String>;

fn type_err(v: &Json, st: &str, field: &str, ty: &str) -> String {
    format!("json: cannot unmarshal {} into Go struct field {}.{} of type {}", v.kind(), st, field, ty)
}

fn obj<'a>(v: Option<&'a Json>, st: &str, field: &str, ty: &str) -> R<Option<&'a Json>> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(o @ Json::Obj(_)) => Ok(Some(o)),
        Some(x) => Err(if field.is_empty() {
            format!("json: cannot unmarshal {} into Go value of type {}", x.kind(), ty)
        } else {
            type_err(x, st, field, ty)
        }),
    }
}

fn s(o: &Json, k: &str, st: &str, path: &str) -> R<String> {
    match o.get(k) {
        None | Some(Json::Null) => Ok(String::new()),
        Some(Json::Str(s)) => Ok(s.clone()),
        Some(x) => Err(type_err(x, st, &join(path, k), "string")),
    }
}

fn b(o: &Json, k: &str, st: &str, path: &str) -> R<bool> {
    match o.get(k) {
        None | Some(Json::Null) => Ok(false),
        Some(Json::Bool(v)) => Ok(*v),
        Some(x) => Err(type_err(x, st, &join(path, k), "bool")),
    }
}

fn int(o: &Json, k: &str, st: &str, path: &str) -> R<i64> {
    match o.get(k) {
        None | Some(Json::Null) => Ok(0),
        Some(Json::Num(n)) => n
            .parse::<i64>()
            .map_err(|_| format!("json: cannot unmarshal number {} into Go struct field {}.{} of type int", n, st, join(path, k))),
        Some(x) => Err(type_err(x, st, &join(path, k), "int")),
    }
}

fn strs(o: &Json, k: &str, st: &str, path: &str) -> R<Vec<String>> {
    match o.get(k) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Arr(a)) => a
            .iter()
            .map(|x| match x {
                Json::Null => Ok(String::new()),
                Json::Str(s) => Ok(s.clone()),
                x => Err(type_err(x, st, &join(path, k), "string")),
            })
            .collect(),
        Some(x) => Err(type_err(x, st, &join(path, k), "[]string")),
    }
}

fn objs<'a>(o: &'a Json, k: &str, st: &str, path: &str, ty: &str) -> R<Vec<&'a Json>> {
    match o.get(k) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Arr(a)) => {
            let mut out = Vec::new();
            for x in a {
                match x {
                    Json::Null | Json::Obj(_) => out.push(x),
                    x => return Err(type_err(x, st, &join(path, k), &ty[2..])),
                }
            }
            Ok(out)
        }
        Some(x) => Err(type_err(x, st, &join(path, k), ty)),
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{}.{}", path, k)
    }
}

fn raw_member(v: Option<&Json>) -> Option<Json> {
    v.cloned()
}

/// Decodes the request the host sent (what json.Unmarshal into abi.Request
/// reads, for the fields the plugins use).
pub fn parse_request(input: &[u8]) -> R<Request> {
    let known_config = unsafe { (*std::ptr::addr_of!(KNOWN_CONFIG)).clone() };
    if let Some((mut req, found)) = reader::read(input, known_config.as_deref().map(|v| v.as_slice())) {
        if let Some((start, end)) = found.config {
            // One thread (single-threaded wasm), and nothing else touches it.
            unsafe {
                let known = &mut *std::ptr::addr_of_mut!(KNOWN_CONFIG);
                if !found.known || known.is_none() {
                    let c = &input[start..end];
                    *known = arena::persistent(|| Some(Rc::new(c.to_vec())));
                }
                req.config = known.clone();
            }
        }
        return Ok(req);
    }
    parse_request_tree(input)
}

/// parse_request for any input: the request read as a tree, with
/// encoding/json's errors.
fn parse_request_tree(input: &[u8]) -> R<Request> {
    // raw (the agent's whole message) is never read and config only when
    // needed: both are checked, not built.
    // The config found valid in the last request is recognised by its
    // bytes and not read again.
    let parsed = unsafe { json::parse_keeping_known(input, &["raw", "config"], (*std::ptr::addr_of!(KNOWN_CONFIG)).as_deref().map(|v| v.as_slice()))? };
    let top = &parsed.value;
    let top = match top {
        Json::Obj(_) => top,
        Json::Null => return Ok(Request::default()),
        x => return Err(format!("json: cannot unmarshal {} into Go value of type abi.Request", x.kind())),
    };
    let mut req = Request::default();
    if let Some(se) = obj(top.get("session"), "Request", "session", "abi.Session")? {
        req.session.cwd = s(se, "cwd", "Session", "session")?;
        req.session.mode = s(se, "mode", "Session", "session")?;
        req.session.home = s(se, "home", "Session", "session")?;
    }
    if let Some(tc) = obj(top.get("toolCall"), "Request", "toolCall", "abi.ToolCall")? {
        let t = &mut req.tool_call;
        t.title = s(tc, "title", "ToolCall", "toolCall")?;
        t.kind = s(tc, "kind", "ToolCall", "toolCall")?;
        t.tool_name = s(tc, "toolName", "ToolCall", "toolCall")?;
        t.raw_input = raw_member(tc.get("rawInput"));
        t.content = raw_member(tc.get("content"));
        for l in objs(tc, "locations", "ToolCall", "toolCall", "[]abi.Location")? {
            t.locations.push(s(l, "path", "Location", "toolCall.locations")?);
        }
    }
    if let Some(a) = obj(top.get("action"), "Request", "action", "abi.Action")? {
        req.action = Some(Action {
            family: s(a, "family", "Action", "action")?,
            command: s(a, "command", "Action", "action")?,
            cwd: s(a, "cwd", "Action", "action")?,
            paths: strs(a, "paths", "Action", "action")?,
            urls: strs(a, "urls", "Action", "action")?,
        });
    }
    for o in objs(top, "options", "Request", "", "[]abi.Option")? {
        let changes = match obj(o.get("changes"), "Option", "options.changes", "abi.ChangeSet")? {
            None => None,
            Some(c) => Some(b(c, "known", "ChangeSet", "options.changes")?),
        };
        req.options.push(Opt {
            option_id: s(o, "optionId", "Option", "options")?,
            kind: s(o, "kind", "Option", "options")?,
            durable: b(o, "durable", "Option", "options")?,
            changes,
        });
    }
    if let Some(sh) = obj(top.get("shell"), "Request", "shell", "abi.Shell")? {
        let mut shell = Shell {
            source: s(sh, "source", "Shell", "shell")?,
            parsed: b(sh, "parsed", "Shell", "shell")?,
            reason: s(sh, "reason", "Shell", "shell")?,
            commands: Vec::new(),
        };
        for c in objs(sh, "commands", "Shell", "shell", "[]abi.Command")? {
            let p = "shell.commands";
            let mut cmd = Command {
                argv: strs(c, "argv", "Command", p)?,
                wrappers: strs(c, "wrappers", "Command", p)?,
                dynamic: b(c, "dynamic", "Command", p)?,
                pipeline: int(c, "pipeline", "Command", p)?,
                stage: int(c, "stage", "Command", p)?,
                ..Default::default()
            };
            for a in objs(c, "assignments", "Command", p, "[]abi.Assignment")? {
                let p = "shell.commands.assignments";
                cmd.assignments.push((s(a, "name", "Assignment", p)?, s(a, "value", "Assignment", p)?));
            }
            for r in objs(c, "redirects", "Command", p, "[]abi.Redirect")? {
                let p = "shell.commands.redirects";
                cmd.redirects.push(Redirect { op: s(r, "op", "Redirect", p)?, target: s(r, "target", "Redirect", p)?, write: b(r, "write", "Redirect", p)? });
            }
            shell.commands.push(cmd);
        }
        req.shell = Some(shell);
    }
    for p in objs(top, "paths", "Request", "", "[]abi.Path")? {
        req.paths.push(PathEntry {
            path: s(p, "path", "Path", "paths")?,
            resolved: s(p, "resolved", "Path", "paths")?,
            access: s(p, "access", "Path", "paths")?,
            inside_cwd: b(p, "insideCwd", "Path", "paths")?,
        });
    }
    if let Some((_, start, end)) = parsed.spans.iter().rev().find(|(k, _, _)| k == "config") {
        // One thread (single-threaded wasm), and nothing else touches it.
        unsafe {
            let known = &mut *std::ptr::addr_of_mut!(KNOWN_CONFIG);
            if parsed.known_at != Some(*start) || known.is_none() {
                let c = &input[*start..*end];
                *known = arena::persistent(|| Some(Rc::new(c.to_vec())));
            }
            req.config = known.clone();
        }
    }
    arena::discard(parsed);
    Ok(req)
}

/// The bytes of the config member the last request carried, valid JSON
/// (the whole request parsed). A request with the same config shares
/// them: team-rules knows its rules by this Rc.
static mut KNOWN_CONFIG: Option<Rc<Vec<u8>>> = None;

impl Request {
    /// The config when it says something: absent and null are none.
    pub fn config(&self) -> Option<Json> {
        match self.config.as_ref().map(|b| json::parse(b)) {
            None | Some(Ok(Json::Null)) | Some(Err(_)) => None,
            Some(Ok(v)) => Some(v),
        }
    }
}

// ---- pdk.InputString, pdk.CommandText, pdk.Feeds ----

pub fn input_string(req: &Request, key: &str) -> String {
    match &req.tool_call.raw_input {
        Some(m @ Json::Obj(_)) => match m.get(key) {
            Some(Json::Str(s)) => s.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

pub fn command_text(req: &Request) -> String {
    if let Some(a) = &req.action {
        return a.command.clone();
    }
    if let Some(sh) = &req.shell {
        if !sh.source.is_empty() {
            return sh.source.clone();
        }
    }
    let m = match &req.tool_call.raw_input {
        Some(m @ Json::Obj(_)) => m,
        _ => return String::new(),
    };
    match m.get("command") {
        Some(Json::Str(s)) => s.clone(),
        Some(Json::Null) | None => String::new(),
        Some(Json::Arr(a)) => {
            let mut argv = Vec::new();
            for x in a {
                match x {
                    Json::Str(s) => argv.push(s.clone()),
                    Json::Null => argv.push(String::new()),
                    _ => return String::new(),
                }
            }
            if argv.is_empty() {
                return String::new();
            }
            if argv.len() >= 3 && is_shell(&argv[0]) && argv[1].starts_with('-') && argv[1].ends_with('c') {
                return argv[2].clone();
            }
            argv.join(" ")
        }
        _ => String::new(),
    }
}

fn is_shell(name: &str) -> bool {
    let n = match name.rfind('/') {
        Some(i) => &name[i + 1..],
        None => name,
    };
    matches!(n, "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish")
}

pub fn feeds(a: &Command, b: &Command) -> bool {
    a.pipeline > 0 && a.pipeline == b.pipeline && a.stage > 0 && a.stage < b.stage
}

// ---- Decisions (abi.Decision) ----

#[derive(Default)]
pub struct Decision {
    pub outcome: &'static str,
    pub reason: String,
    /// summary, risk, riskLevel
    pub explanation: Option<(String, String, String)>,
}

impl Decision {
    pub fn abstain() -> Decision {
        Decision { outcome: "abstain", ..Default::default() }
    }
    pub fn with(outcome: &'static str, reason: String) -> Decision {
        Decision { outcome, reason, explanation: None }
    }
}

/// abi.Decision.Option's narrowestOfKind: whether an option of kind
/// qualifies.
pub fn narrowest_of_kind<'a>(options: &'a [Opt], kind: &str) -> Option<&'a Opt> {
    let mut durable: Option<&Opt> = None;
    for o in options {
        if o.kind != kind || o.changes == Some(false) {
            continue;
        }
        if !o.durable && o.changes.is_none() && (kind == "allow_once" || kind == "reject_once") {
            return Some(o);
        }
        if durable.is_none() {
            durable = Some(o);
        }
    }
    durable
}

/// pdk.Handle after Decide: clean the text, validate, encode.
pub fn encode_decision(name: &str, req: &Request, mut d: Decision) -> R<String> {
    d.reason = text::clean(&d.reason, 0);
    if d.outcome == "allow" && narrowest_of_kind(&req.options, "allow_once").is_none() {
        return Err(format!("pdk: {} returned an invalid decision: abi: option not offered: allow once with no allow_once option", name));
    }
    let mut o = Obj::new().str("outcome", d.outcome).opt("reason", &d.reason);
    if let Some((summary, risk, level)) = &d.explanation {
        let e = Obj::new().opt("summary", &text::clean(summary, 0)).opt("risk", &text::clean(risk, 0)).opt("riskLevel", level).end();
        o = o.raw("explanation", &e);
    }
    Ok(o.end())
}

// ---- Configuration (pdk.DecodeConfig, pdk.UnknownKeys) ----

/// What a field of a Go config struct is.
#[derive(Clone, Copy, PartialEq)]
pub enum Field {
    /// string
    Str,
    /// []string
    StrList,
    /// json.RawMessage: any value, null included
    Raw,
    /// *json.RawMessage: any value; null is none
    RawPtr,
    /// []json.RawMessage
    RawList,
}

/// A decoding error of encoding/json: an unknown field, or an
/// UnmarshalTypeError (value, the Go type, and for a field of a struct the
/// struct and the field).
pub struct DecErr {
    pub unknown: String,
    pub value: &'static str,
    pub ty: String,
    pub st: String,
    pub field: String,
}

impl DecErr {
    /// The error's text, as Go's Error method writes it.
    pub fn go(&self) -> String {
        if !self.unknown.is_empty() {
            format!("json: unknown field {}", text::quote(&self.unknown))
        } else if !self.field.is_empty() {
            format!("json: cannot unmarshal {} into Go struct field {}.{} of type {}", self.value, self.st, self.field, self.ty)
        } else {
            format!("json: cannot unmarshal {} into Go value of type {}", self.value, self.ty)
        }
    }
}

/// Decodes v as json.Decoder with DisallowUnknownFields decodes into a Go
/// struct named st (type name ty) with the given fields: the values by
/// field (None when absent, or null where Go leaves the field zero), or
/// Go's first error. Keys match fields exactly, else case-insensitively, as
/// Go's.
pub fn decode_struct<'a>(v: &'a Json, st: &str, ty: &str, fields: &[(&str, Field)]) -> Result<Vec<Option<&'a Json>>, DecErr> {
    let mut out: Vec<Option<&Json>> = vec![None; fields.len()];
    let members = match v {
        Json::Null => return Ok(out),
        Json::Obj(m) => m,
        x => return Err(DecErr { unknown: String::new(), value: x.kind(), ty: ty.to_string(), st: String::new(), field: String::new() }),
    };
    let mut first: Option<DecErr> = None;
    for (k, x) in members {
        let i = fields.iter().position(|(n, _)| n == k).or_else(|| fields.iter().position(|(n, _)| fold(n) == fold(k)));
        let i = match i {
            None => {
                if first.is_none() {
                    first = Some(DecErr { unknown: k.clone(), value: "", ty: String::new(), st: String::new(), field: String::new() });
                }
                continue;
            }
            Some(i) => i,
        };
        let (name, kind) = fields[i];
        let mut terr = |t: &str, x: &Json| {
            if first.is_none() {
                first = Some(DecErr { unknown: String::new(), value: x.kind(), ty: t.to_string(), st: st.to_string(), field: name.to_string() });
            }
        };
        match (kind, x) {
            (Field::Raw, _) => out[i] = Some(x),
            (Field::RawPtr, Json::Null) => out[i] = None,
            (Field::RawPtr, _) => out[i] = Some(x),
            (Field::Str, Json::Null) => {}
            (Field::Str, Json::Str(_)) => out[i] = Some(x),
            (Field::Str, _) => terr("string", x),
            (Field::StrList, Json::Null) | (Field::RawList, Json::Null) => out[i] = None,
            (Field::StrList, Json::Arr(a)) => {
                for e in a {
                    if !matches!(e, Json::Str(_) | Json::Null) {
                        terr("string", e);
                    }
                }
                out[i] = Some(x);
            }
            (Field::StrList, _) => terr("[]string", x),
            (Field::RawList, Json::Arr(_)) => out[i] = Some(x),
            (Field::RawList, _) => terr("[]json.RawMessage", x),
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

use json::fold;

/// The strings of a decoded []string field (null elements are "").
pub fn str_list(v: Option<&Json>) -> Option<Vec<String>> {
    match v {
        Some(Json::Arr(a)) => Some(a.iter().map(|e| e.as_str().unwrap_or("").to_string()).collect()),
        _ => None,
    }
}

pub fn str_field(v: Option<&Json>) -> String {
    v.and_then(|x| x.as_str()).unwrap_or("").to_string()
}

pub struct Problem {
    pub key: String,
    pub message: String,
    pub suggestion: String,
}

/// pdk.UnknownKeys.
pub fn unknown_keys(raw: &Json, prefix: &str, known: &[&str]) -> Vec<Problem> {
    let m = match raw {
        Json::Obj(m) => m,
        _ => return vec![Problem { key: prefix.trim_end_matches('.').to_string(), message: "is not a table".into(), suggestion: String::new() }],
    };
    let mut out = Vec::new();
    for (k, _) in m {
        if !known.contains(&k.as_str()) {
            out.push(Problem { key: format!("{}{}", prefix, k), message: "unknown key".into(), suggestion: text::suggest(k, known) });
        }
    }
    out
}

pub fn encode_problems(problems: &[Problem]) -> String {
    let mut s = String::from("{\"problems\":[");
    for (i, p) in problems.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(
            &Obj::new()
                .opt("key", &text::clean(&p.key, 0))
                .str("message", &text::clean(&p.message, 0))
                .opt("suggestion", &text::clean(&p.suggestion, 0))
                .end(),
        );
    }
    s.push_str("]}");
    s
}

pub fn encode_info(name: &str, version: &str, description: &str, config_keys: &[&str]) -> String {
    let mut o = Obj::new().str("name", name).opt("version", version).opt("description", description);
    if !config_keys.is_empty() {
        o = o.raw("configKeys", &json::str_array(config_keys));
    }
    o.end()
}

/// Defines the four exports of a plugin: NAME, its describe output, its
/// decide function (Request -> Result<Decision, String>, the error without
/// the name) and its check function (config bytes -> problems).
#[macro_export]
macro_rules! plugin {
    ($name:expr, $info:expr, $decide:expr, $check:expr) => {
        #[no_mangle]
        pub extern "C" fn permhost_decide() -> i32 {
            common::arena::call(decide_call)
        }
        fn decide_call() -> i32 {
            let input = common::input();
            let mut req = match common::parse_request(&input) {
                Ok(r) => r,
                Err(e) => return common::fail(&format!("pdk: bad request: {}", e)),
            };
            let d = match $decide(&req) {
                Ok(d) => d,
                Err(e) => return common::fail(&format!("{}: {}", $name, e)),
            };
            let rc = match common::encode_decision($name, &req, d) {
                Ok(out) => {
                    common::output(&out);
                    common::arena::discard(out);
                    0
                }
                Err(e) => common::fail(&e),
            };
            // The config's bytes are kept across calls (persistent): only
            // the rest is the call's.
            drop(req.config.take());
            common::arena::discard(req);
            common::arena::discard(input);
            rc
        }
        #[no_mangle]
        pub extern "C" fn permhost_abi() -> i32 {
            common::output(common::ABI);
            0
        }
        #[no_mangle]
        pub extern "C" fn permhost_describe() -> i32 {
            common::output(&$info);
            0
        }
        #[no_mangle]
        pub extern "C" fn permhost_check_config() -> i32 {
            let input = common::input();
            let problems: Vec<common::Problem> = $check(&input);
            common::output(&common::encode_problems(&problems));
            0
        }
    };
}

/// The check of a plugin without CheckConfig: no problem.
pub fn no_check(_: &[u8]) -> Vec<Problem> {
    Vec::new()
}

/// pdk.DecodeConfig's error prefix.
pub fn config_err(e: DecErr) -> String {
    format!("pdk: config: {}", e.go())
}

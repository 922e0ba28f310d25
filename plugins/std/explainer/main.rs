// explainer: never decides. It abstains with an explanation of the call
// (what it does and why, its risk in a few words and a risk level), which
// permhost shows when a person decides. The reference implementation, with
// the same behaviour, is the Go example in plugins/examples/explainer.
#[path = "../common/mod.rs"]
mod common;

use common::json::Json;
use common::text::{clean, fields, path_base, path_clean, path_join};
use common::{Decision, Redirect, Request};

const LOW: usize = 0;
const MEDIUM: usize = 1;
const HIGH: usize = 2;
const LEVEL_NAMES: [&str; 3] = ["low", "medium", "high"];

fn decide(req: &Request) -> Result<Decision, String> {
    let (level, risk) = assess(req);
    Ok(Decision { outcome: "abstain", reason: String::new(), explanation: Some((summary(req), risk.to_string(), LEVEL_NAMES[level].to_string())) })
}

struct Found(Vec<(usize, String)>);

impl Found {
    fn note(&mut self, level: usize, risk: &str) {
        self.0.push((level, risk.to_string()))
    }
}

fn assess(req: &Request) -> (usize, String) {
    let mut f = Found(Vec::new());
    let cwd = req.session.cwd.as_str();
    for p in &req.paths {
        if p.access == "write" && !p.inside_cwd {
            f.note(HIGH, "Writes outside the project directory.");
        } else if p.access == "write" {
            f.note(MEDIUM, "Changes files inside the project; review the diff.");
        } else if !p.inside_cwd {
            f.note(MEDIUM, "Reads files outside the project directory.");
        }
    }
    let cmd = common::command_text(req);
    let fam = family(req);
    if !cmd.is_empty() || fam == "shell" {
        assess_command(req, &cmd, &mut f);
    } else if fam == "edit" || fam == "delete" || fam == "move" {
        let verb = match fam {
            "edit" => "Changes",
            "delete" => "Deletes",
            _ => "Moves",
        };
        let files = targets(req);
        if files.is_empty() {
            f.note(MEDIUM, &format!("{} files; which ones the agent did not say.", verb));
        } else if any_outside(&files, cwd) {
            f.note(HIGH, &format!("{} files outside the project directory.", verb));
        } else if fam == "delete" {
            f.note(MEDIUM, "Deletes files inside the project; this may not be undoable.");
        } else {
            f.note(MEDIUM, &format!("{} files inside the project; review the diff.", verb));
        }
    } else if fam == "fetch" {
        f.note(HIGH, "Fetches from the network; content may be untrusted or leak data.");
    } else if fam == "switch_mode" {
        f.note(MEDIUM, "Leaves plan mode; the agent may then change files.");
    } else if fam == "read" || fam == "search" || req.tool_call.kind == "think" {
        if any_outside(&targets(req), cwd) {
            f.note(MEDIUM, "Reads files outside the project directory.");
        }
        f.note(LOW, "Only reads; changes nothing.");
    } else if fam == "mcp" {
        f.note(MEDIUM, "Calls an external MCP tool; its effects depend on that server.");
    } else {
        f.note(MEDIUM, "Unknown kind of tool; its effects cannot be predicted.");
    }
    let mut best = (LOW, "Only reads; changes nothing.".to_string());
    for (i, x) in f.0.into_iter().enumerate() {
        if i == 0 || x.0 > best.0 {
            best = x;
        }
    }
    best
}

struct Cmd {
    argv: Vec<String>,
    wrappers: Vec<String>,
    redirects: Vec<Redirect>,
    dynamic: bool,
}

fn commands_of(req: &Request, script: &str) -> (Vec<Cmd>, bool) {
    if let Some(s) = &req.shell {
        let cmds = s.commands.iter().map(|c| Cmd { argv: c.argv.clone(), wrappers: c.wrappers.clone(), redirects: c.redirects.clone(), dynamic: c.dynamic }).collect();
        return (cmds, s.parsed);
    }
    // strings.NewReplacer: at each position the first old string that
    // matches, in argument order.
    let olds = ["&&", "||", ";", "|", "&", "$(", "`"];
    let mut replaced = String::with_capacity(script.len());
    let mut i = 0;
    let b = script.as_bytes();
    'outer: while i < b.len() {
        for o in olds {
            if b[i..].starts_with(o.as_bytes()) {
                replaced.push('\n');
                i += o.len();
                continue 'outer;
            }
        }
        let c = script[i..].chars().next().unwrap();
        replaced.push(c);
        i += c.len_utf8();
    }
    let mut cmds = Vec::new();
    for part in replaced.split('\n') {
        let f = fields(part);
        if !f.is_empty() {
            cmds.push(Cmd { argv: f.iter().map(|s| s.to_string()).collect(), wrappers: Vec::new(), redirects: Vec::new(), dynamic: false });
        }
    }
    (cmds, false)
}

const INTERPRETERS: &[&str] = &["sh", "bash", "zsh", "dash", "fish", "python", "python3", "node", "perl", "ruby"];
const NETWORK: &[&str] = &["curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp"];
const PRIVILEGED: &[&str] = &["sudo", "su", "doas", "pkexec"];
const DESTROYERS: &[&str] = &["dd", "mkfs", "shred", "wipefs", "fdisk"];
const READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "less", "grep", "rg", "wc", "pwd", "echo", "printf", "which", "stat", "file", "tree", "diff", "du", "df", "date", "whoami", "env",
    "true", "false", "test", "[", "sort", "uniq", "cut", "tr", "jq",
];
const READ_ONLY_GIT: &[&str] = &["status", "diff", "log", "show", "branch", "blame", "rev-parse", "ls-files", "remote", "fetch"];
const INSTALLERS: &[&str] = &["npm", "pnpm", "yarn", "pip", "pip3", "cargo", "gem", "apt", "apt-get", "brew"];

fn has(set: &[&str], s: &str) -> bool {
    set.contains(&s)
}

fn assess_command(req: &Request, script: &str, f: &mut Found) {
    let (cmds, parsed) = commands_of(req, script);
    let cwd = req.session.cwd.as_str();
    if req.shell.is_some() && !parsed {
        f.note(HIGH, "The command could not be fully analysed; it may do anything.");
    }
    if cmds.is_empty() {
        f.note(MEDIUM, "Runs a command whose effects cannot be seen.");
        return;
    }
    let (mut downloads, mut runs_code) = (false, false);
    for c in &cmds {
        if !c.argv.is_empty() {
            downloads = downloads || has(NETWORK, base(&c.argv[0]));
            runs_code = runs_code || has(INTERPRETERS, base(&c.argv[0]));
        }
    }
    if downloads && runs_code {
        f.note(HIGH, "Downloads code from the network and runs it.");
    }
    for c in &cmds {
        for w in &c.wrappers {
            if has(PRIVILEGED, base(w)) {
                f.note(HIGH, "Runs with administrator privileges.");
            }
        }
        for r in &c.redirects {
            if !r.write || r.target == "/dev/null" {
                continue;
            }
            if outside(&resolve(&r.target, cwd), cwd) {
                f.note(HIGH, "Writes a file outside the project directory.");
            } else {
                f.note(MEDIUM, "Writes a file inside the project.");
            }
        }
        if c.dynamic {
            f.note(MEDIUM, "Parts of the command are only known when it runs.");
        }
        if c.argv.is_empty() {
            continue;
        }
        let name = base(&c.argv[0]);
        let args = &c.argv[1..];
        if has(PRIVILEGED, name) {
            f.note(HIGH, "Runs with administrator privileges.");
        } else if name == "rm" {
            if has_flag(args, &["r", "R", "recursive"]) {
                f.note(HIGH, "Recursively deletes files; this cannot be undone.");
            } else {
                f.note(MEDIUM, "Deletes files; this cannot be undone.");
            }
            for a in args {
                if !a.starts_with('-') && outside(&resolve(a, cwd), cwd) {
                    f.note(HIGH, "Deletes files outside the project directory.");
                }
            }
        } else if has(NETWORK, name) {
            f.note(HIGH, "Uses the network; data may leave or enter the machine.");
        } else if has(INTERPRETERS, name) {
            f.note(MEDIUM, "Runs a script whose contents are not shown here.");
        } else if has(DESTROYERS, name) {
            f.note(HIGH, "Can destroy disks or data irreversibly.");
        } else if (name == "chmod" || name == "chown") && has_flag(args, &["R", "recursive"]) {
            f.note(HIGH, "Changes permissions or ownership of a whole tree.");
        } else if name == "git" && !args.is_empty() {
            let a0 = args[0].as_str();
            if a0 == "push" {
                f.note(HIGH, "Publishes commits to a remote repository.");
            } else if a0 == "reset" && has_flag(args, &["hard"]) || a0 == "clean" || a0 == "checkout" && contains(args, "--") {
                f.note(HIGH, "Discards uncommitted work irreversibly.");
            } else if has(READ_ONLY_GIT, a0) {
                f.note(LOW, "Only reads the repository; changes nothing.");
            } else {
                f.note(MEDIUM, "Changes the git repository.");
            }
        } else if name == "find" {
            if contains(args, "-delete") || contains(args, "-exec") || contains(args, "-execdir") {
                f.note(HIGH, "Deletes or runs commands on every file found.");
            } else {
                f.note(LOW, "Only reads; changes nothing.");
            }
        } else if has(INSTALLERS, name) && !args.is_empty() && (args[0] == "install" || args[0] == "add" || args[0] == "i") {
            f.note(MEDIUM, "Installs packages, which may run their own install scripts.");
        } else if name == "go" && !args.is_empty() && (args[0] == "get" || args[0] == "install") {
            f.note(MEDIUM, "Installs packages from the network.");
        } else if has(READ_ONLY, name) {
            f.note(LOW, "Only reads; changes nothing.");
        } else {
            f.note(MEDIUM, "Runs a program that may change files in the project.");
        }
    }
}

fn summary(req: &Request) -> String {
    let tc = &req.tool_call;
    let cmd = common::command_text(req);
    let fam = family(req);
    let mut what;
    if !cmd.is_empty() {
        what = format!("Runs `{}`", clean(&one_line(&cmd), 120));
        let dir = first(&[action_cwd(req), &req.session.cwd]);
        if !dir.is_empty() {
            what += &format!(" in {}", clean(dir, 200));
        }
    } else if fam == "switch_mode" {
        what = "Asks to leave plan mode".to_string();
        let plan = common::input_string(req, "plan");
        if !plan.is_empty() {
            what += &format!(" and carry out the plan: {}", clean(&one_line(&plan), 160));
        }
    } else if fam == "fetch" {
        let urls = req.action.as_ref().map(|a| a.urls.join(", ")).unwrap_or_default();
        what = format!("Fetches {}", clean(first(&[&urls, &tc.title, "a resource from the network"]), 200));
    } else {
        let files = targets(req);
        let mut verb = match fam {
            "read" => "Reads",
            "edit" => "Edits",
            "delete" => "Deletes",
            "move" => "Moves",
            "search" => "Searches",
            _ => "",
        };
        if fam == "edit" && creates(req) {
            verb = "Creates";
        }
        if !verb.is_empty() && !files.is_empty() {
            what = format!("{} {}", verb, clean(&files.join(", "), 300));
        } else if !tc.title.is_empty() {
            what = format!("Uses {}: {}", first(&[&tc.tool_name, "a tool"]), clean(&one_line(&tc.title), 120));
        } else {
            let k = format!("a tool of kind {}", first(&[&tc.kind, "unknown"]));
            what = format!("Uses {}", first(&[&tc.tool_name, &k]));
        }
    }
    let why = reason(req);
    if !why.is_empty() && !what.contains(why.as_str()) {
        return format!("{}. Why: {}", what, sentence(clean(&one_line(&why), 200)));
    }
    sentence(what)
}

fn family(req: &Request) -> &str {
    if let Some(a) = &req.action {
        return &a.family;
    }
    if req.tool_call.kind == "execute" {
        return "shell";
    }
    &req.tool_call.kind
}

fn action_cwd(req: &Request) -> &str {
    req.action.as_ref().map(|a| a.cwd.as_str()).unwrap_or("")
}

fn reason(req: &Request) -> String {
    for k in ["description", "reason", "justification"] {
        let s = common::input_string(req, k);
        if !s.is_empty() {
            return s;
        }
    }
    String::new()
}

fn targets(req: &Request) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |p: String| {
        if !p.is_empty() && !out.contains(&p) {
            out.push(p);
        }
    };
    for p in &req.paths {
        add(p.path.clone());
    }
    match &req.action {
        Some(a) => {
            for p in &a.paths {
                add(p.clone());
            }
        }
        None => {
            for l in &req.tool_call.locations {
                add(resolve(l, &req.session.cwd));
            }
        }
    }
    out
}

/// Go's json.Unmarshal of toolCall.content into a list of
/// {type, oldText *RawMessage, _meta {kind}}: any type mismatch fails the
/// whole decode, and then nothing is created.
fn creates(req: &Request) -> bool {
    let items = match &req.tool_call.content {
        Some(Json::Arr(a)) => a,
        _ => return false,
    };
    let mut decoded = Vec::new();
    for it in items {
        let m = match it {
            Json::Null => {
                decoded.push((String::new(), None, String::new()));
                continue;
            }
            Json::Obj(_) => it,
            _ => return false,
        };
        let ty = match m.get_fold("type") {
            None | Some(Json::Null) => String::new(),
            Some(Json::Str(s)) => s.clone(),
            _ => return false,
        };
        let old = match m.get_fold("oldText") {
            None | Some(Json::Null) => None,
            Some(x) => Some(x.clone()),
        };
        let kind = match m.get_fold("_meta") {
            None | Some(Json::Null) => String::new(),
            Some(meta @ Json::Obj(_)) => match meta.get_fold("kind") {
                None | Some(Json::Null) => String::new(),
                Some(Json::Str(s)) => s.clone(),
                _ => return false,
            },
            _ => return false,
        };
        decoded.push((ty, old, kind));
    }
    decoded.iter().any(|(ty, old, kind)| ty == "diff" && (old.is_none() || kind == "add"))
}

fn any_outside(files: &[String], cwd: &str) -> bool {
    files.iter().any(|f| outside(f, cwd))
}

fn outside(p: &str, cwd: &str) -> bool {
    if cwd.is_empty() || !p.starts_with('/') {
        return true;
    }
    let cwd = cwd.strip_suffix('/').unwrap_or(cwd);
    p != cwd && !p.starts_with(&format!("{}/", cwd))
}

fn resolve(p: &str, cwd: &str) -> String {
    if p.starts_with('/') {
        path_clean(p)
    } else if p.starts_with('~') || p.starts_with('$') {
        p.to_string()
    } else if !cwd.is_empty() {
        path_join(cwd, p)
    } else {
        p.to_string()
    }
}

fn has_flag(args: &[String], names: &[&str]) -> bool {
    for a in args {
        if a == "--" {
            return false;
        }
        for n in names {
            if n.len() == 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(n) {
                return true;
            }
            if n.len() > 1 && *a == format!("--{}", n) {
                return true;
            }
        }
    }
    false
}

fn contains(args: &[String], s: &str) -> bool {
    args.iter().any(|a| a == s)
}

fn base(name: &str) -> &str {
    let b = path_base(name);
    b.strip_prefix('\\').unwrap_or(b)
}

fn first<'a>(s: &[&'a str]) -> &'a str {
    s.iter().find(|v| !v.is_empty()).copied().unwrap_or("")
}

fn one_line(s: &str) -> String {
    fields(s).join(" ")
}

fn sentence(s: String) -> String {
    if s.ends_with('.') || s.ends_with('!') || s.ends_with('?') || s.ends_with('…') {
        return s;
    }
    s + "."
}

plugin!(
    "explainer",
    common::encode_info("explainer", "1.0.0", "Abstains with an explanation: what the call does, why, its risk and a risk level.", &[]),
    decide,
    common::no_check
);

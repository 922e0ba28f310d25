// plan-mode: keeps an agent to planning. It rejects every edit, delete,
// move and shell command and abstains on everything else; with
// only_in_mode it acts only while the session is in that mode. The
// reference implementation, with the same behaviour, is the Go example in
// plugins/examples/plan-mode.
#[path = "../common/mod.rs"]
mod common;

use common::{Decision, Field, Request};

fn decide(req: &Request) -> Result<Decision, String> {
    let mut only_in_mode = String::new();
    if let Some(cfg) = req.config() {
        let f = common::decode_struct(&cfg, "config", "main.config", &[("only_in_mode", Field::Str)]).map_err(common::config_err)?;
        only_in_mode = common::str_field(f[0]);
    }
    if !only_in_mode.is_empty() && req.session.mode != only_in_mode {
        return Ok(Decision::abstain());
    }
    let what = match family(req) {
        "edit" => "edits",
        "delete" => "deletes",
        "move" => "moves",
        "shell" => "commands",
        _ => return Ok(Decision::abstain()),
    };
    Ok(Decision::with("reject", format!("plan mode: {} are not allowed while planning ({})", what, describe(req))))
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

fn describe(req: &Request) -> String {
    let tc = &req.tool_call;
    for s in [&tc.title, &tc.tool_name, &tc.kind] {
        if !s.is_empty() {
            return common::text::clean(s, 200);
        }
    }
    "unknown tool".to_string()
}

plugin!(
    "plan-mode",
    common::encode_info("plan-mode", "1.0.0", "Rejects every edit, delete, move and execute; abstains otherwise.", &["only_in_mode"]),
    decide,
    common::no_check
);

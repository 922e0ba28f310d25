// readonly-as: a permhost plugin written in AssemblyScript, to show that the
// plugin ABI needs nothing from Go. It allows (once) a read or search whose
// every path is a read of a non-hidden file inside the session's working
// directory, and abstains on everything else, so it can only ever widen what
// is allowed to reading the project the person opened. It goes by the
// request's action (ABI 1.1), which permhost reads from each agent's own
// shape: a Gemini CLI read_file and a claude-agent-acp Read look the same.
// Each path must be inside and not hidden both as written and as the OS
// opens it (ABI 1.2's resolved): a config.txt that is a symlink to .env, or
// a k/../x whose k leads out of the project, is not read here.

import { Host } from "@extism/as-pdk";
import { error_set, alloc, store_u8 } from "@extism/as-pdk/lib/env";
import { JSONValue, Kind, Parser, quote } from "./json";

const name = "readonly-as";

export function permhost_abi(): i32 {
  output('{"major":1,"minor":4}');
  return 0;
}

export function permhost_describe(): i32 {
  output(
    '{"name":"readonly-as","version":"0.2.0","description":' +
      quote("Allows reads and searches inside the session cwd; abstains otherwise. Written in AssemblyScript.") +
      "}",
  );
  return 0;
}

export function permhost_decide(): i32 {
  const input = String.UTF8.decode(Host.input().buffer);
  const parser = new Parser(input);
  const req = parser.parse();
  if (req === null || req.kind != Kind.Object) {
    const err = parser.error;
    fail(
      err === null
        ? "request is not a JSON object"
        : "bad request JSON at character " + err.offset.toString() + ": " + err.message,
    );
    return 1;
  }
  output(decide(req));
  return 0;
}

// decide returns the Decision JSON for req.
function decide(req: JSONValue): string {
  const action = req.get("action");
  if (action === null || action.kind != Kind.Object) {
    return abstain("the request has no action (a host older than ABI 1.1)");
  }
  const family = action.str("family");
  if (family != "read" && family != "search") {
    return abstain("not a read or search");
  }
  // A read that carries a shell command is not a plain read.
  const shell = req.get("shell");
  if ((shell !== null && !shell.isNull()) || action.str("command") != "") {
    return abstain("the call carries a shell command");
  }
  const session = req.get("session");
  let cwd = session === null ? "" : session.str("cwd");
  while (cwd.length > 1 && cwd.endsWith("/")) cwd = cwd.substring(0, cwd.length - 1);
  if (!cwd.startsWith("/")) {
    return abstain("the session cwd is unknown");
  }
  if (cwd == "/") {
    return abstain("the session cwd is the root directory");
  }
  const paths = req.get("paths");
  if (paths === null || paths.kind != Kind.Array || paths.items.length == 0) {
    return abstain("the call names no path");
  }
  for (let i = 0; i < paths.items.length; i++) {
    const p = paths.items[i];
    const path = p.str("path");
    if (p.str("access") != "read") {
      return abstain(shown(path) + " is not only read");
    }
    const inside = p.get("insideCwd");
    if (inside === null || inside.kind != Kind.Bool || !inside.bool || !under(path, cwd)) {
      return abstain(shown(path) + " is outside " + shown(cwd));
    }
    // Hidden files and directories (.env, .git, .npmrc, .ssh when the cwd
    // is a home directory) are where credentials live: leave them to a
    // person or to a plugin that knows them.
    if (hidden(path, cwd)) {
      return abstain(shown(path) + " is a hidden file or inside a hidden directory");
    }
    // The file the OS opens: absent when permhost could not resolve it.
    const resolved = p.str("resolved");
    if (!under(resolved, cwd)) {
      return abstain(shown(path) + " opens " + (resolved == "" ? "a file permhost cannot resolve" : shown(resolved)) + ", outside " + shown(cwd));
    }
    if (hidden(resolved, cwd)) {
      return abstain(shown(path) + " opens " + shown(resolved) + ", a hidden file or inside a hidden directory");
    }
  }
  if (!offers(req, "allow_once")) {
    return abstain("no allow_once option was offered");
  }
  const n = paths.items.length;
  return (
    '{"outcome":"allow","reason":' +
    quote(name + ": " + family + " of " + n.toString() + (n == 1 ? " path" : " paths") + " inside " + shown(cwd)) +
    "}"
  );
}

// under reports whether path is dir or below it, refusing any "." or ".."
// segment rather than resolving it.
function under(path: string, dir: string): bool {
  if (!path.startsWith("/")) return false;
  const segments = path.split("/");
  for (let i = 0; i < segments.length; i++) {
    if (segments[i] == "." || segments[i] == "..") return false;
  }
  if (path == dir) return true;
  const prefix = dir == "/" ? "/" : dir + "/";
  return path.startsWith(prefix);
}

// hidden reports whether a segment of path below dir starts with a dot.
function hidden(path: string, dir: string): bool {
  if (path.length <= dir.length) return false;
  const segments = path.substring(dir.length).split("/");
  for (let i = 0; i < segments.length; i++) {
    if (segments[i].startsWith(".")) return true;
  }
  return false;
}

function offers(req: JSONValue, optionKind: string): bool {
  const options = req.get("options");
  if (options === null || options.kind != Kind.Array) return false;
  for (let i = 0; i < options.items.length; i++) {
    if (options.items[i].str("kind") == optionKind) return true;
  }
  return false;
}

// shown returns agent-supplied text fit for a reason a person reads:
// control characters (terminal escapes among them) become "?", and long
// text is cut.
function shown(s: string): string {
  const max = 200;
  const parts: string[] = [];
  const n = s.length < max ? s.length : max;
  let run = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c < 0xa0)) {
      parts.push(s.substring(run, i));
      parts.push("?");
      run = i + 1;
    }
  }
  parts.push(s.substring(run, n));
  if (s.length > max) parts.push("…");
  return parts.join("");
}

function abstain(why: string): string {
  return '{"outcome":"abstain","reason":' + quote(name + ": " + why) + "}";
}

// output sets the call's output. The PDK's Host.outputString sizes the output
// by UTF-16 units, which truncates non-ASCII text, so encode first.
function output(s: string): void {
  Host.output(Uint8Array.wrap(String.UTF8.encode(s)));
}

// fail sets the Extism error message of the call.
function fail(message: string): void {
  const bytes = Uint8Array.wrap(String.UTF8.encode(message));
  const offset = alloc(bytes.length);
  for (let i = 0; i < bytes.length; i++) store_u8(offset + i, bytes[i]);
  error_set(offset);
}

// abort replaces AssemblyScript's env.abort import, which the permhost sandbox
// refuses: it records the message as the call's error; the caller then traps.
function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  fail(
    "abort: " + (message === null ? "" : message) + " at " + (fileName === null ? "?" : fileName) +
      ":" + line.toString() + ":" + column.toString(),
  );
}

/* no-force-push: a permhost plugin in C that refuses force-pushes.
 *
 * It rejects a command that runs `git push` with --force, -f (alone or in
 * a cluster such as -fu), --mirror, a +refspec, or --force-with-lease
 * (unless [plugin.config] allow_force_with_lease = true), wherever the
 * command sits in the script (after bash -c, sudo, env, in a pipeline...).
 * A git push whose words are only known at run time, or a script the
 * analysis could not fully parse that mentions push, goes to a person
 * (ask). Everything else is left to the other plugins (abstain).
 *
 * It reads the request's shell analysis (docs/abi.md, "shell"), not the
 * raw command text. Built by `make plugins` with Debian's clang and lld;
 * see docs/abi.md, "C".
 */
#include "permhost.h"

/* ---- a small JSON reader over the request, which permhost encodes ---- */

typedef struct {
  const char *p, *end;
} span; /* one JSON value */

static const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* skip returns the end of the value at p, or NULL when it is malformed. */
static const char *skip(const char *p, const char *end, int depth) {
  p = ws(p, end);
  if (p >= end || depth > 64) return NULL;
  if (*p == '"') {
    for (p++; p < end; p++) {
      if (*p == '\\') p++;
      else if (*p == '"') return p + 1;
    }
    return NULL;
  }
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = skip(p, end, depth + 1); /* the key */
        if (!p || (p = ws(p, end)) >= end || *p != ':') return NULL;
        p++;
      }
      if (!(p = skip(p, end, depth + 1)) || (p = ws(p, end)) >= end) return NULL;
      if (*p == close) return p + 1;
      if (*p != ',') return NULL;
      p++;
    }
  }
  while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
  return p;
}

/* decode copies the JSON string at v into out (NUL-terminated, escapes
 * resolved, \u escapes as UTF-8) and returns 1; 0 when v is not a string
 * or does not fit. */
static int decode(span v, char *out, size_t cap) {
  const char *p = ws(v.p, v.end);
  size_t n = 0;
  if (p >= v.end || *p != '"') return 0;
  for (p++; p < v.end && *p != '"'; p++) {
    unsigned c = (unsigned char)*p;
    if (c == '\\' && ++p < v.end) {
      switch (*p) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          c = 0;
          for (int i = 0; i < 4; i++) {
            char h = ++p < v.end ? *p : 0;
            c = c << 4 | (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 0);
          }
          if (n + 3 >= cap) return 0;
          if (c >= 0x800) { /* surrogate pairs are kept as two code points: fine for comparing ASCII */
            out[n++] = (char)(0xe0 | c >> 12);
            out[n++] = (char)(0x80 | (c >> 6 & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
          } else if (c >= 0x80) {
            out[n++] = (char)(0xc0 | c >> 6);
            out[n++] = (char)(0x80 | (c & 0x3f));
          } else {
            out[n++] = (char)c;
          }
          continue;
        }
        default: c = (unsigned char)*p; /* " \ / */
      }
    }
    if (n + 1 >= cap) return 0;
    out[n++] = (char)c;
  }
  out[n] = 0;
  return p < v.end;
}

static int str_eq(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

static int has_prefix(const char *s, const char *prefix) {
  while (*prefix && *s == *prefix) s++, prefix++;
  return !*prefix;
}

/* get finds member key of the object v. */
static int get(span v, const char *key, span *out) {
  const char *p = ws(v.p, v.end), *end = v.end;
  if (p >= end || *p != '{') return 0;
  p = ws(p + 1, end);
  while (p < end && *p == '"') {
    char name[64];
    const char *k = p;
    if (!(p = skip(p, end, 0))) return 0;
    int match = decode((span){k, p}, name, sizeof name) && str_eq(name, key);
    if ((p = ws(p, end)) >= end || *p != ':') return 0;
    const char *val = ws(p + 1, end);
    if (!(p = skip(val, end, 0))) return 0;
    if (match) {
      *out = (span){val, p};
      return 1;
    }
    if ((p = ws(p, end)) < end && *p == ',') p = ws(p + 1, end);
  }
  return 0;
}

/* next steps through the array *it (first call: it->p at '['). */
static int next(span *it, span *elem) {
  const char *p = ws(it->p, it->end);
  if (p < it->end && (*p == '[' || *p == ',')) p = ws(p + 1, it->end);
  if (p >= it->end || *p == ']') return 0;
  const char *e = skip(p, it->end, 0);
  if (!e) return 0;
  *elem = (span){p, e};
  it->p = e;
  return 1;
}

static int is_true(span v) {
  const char *p = ws(v.p, v.end);
  return v.end - p >= 4 && p[0] == 't' && p[1] == 'r' && p[2] == 'u' && p[3] == 'e';
}

static int contains(span v, const char *s) {
  size_t n = ph_strlen(s);
  for (const char *p = v.p; p + n <= v.end; p++) {
    size_t i = 0;
    while (i < n && p[i] == s[i]) i++;
    if (i == n) return 1;
  }
  return 0;
}

/* ---- the decision ---- */

static char out[2048];
static size_t outn;

static void put(const char *s) {
  while (*s && outn + 1 < sizeof out) out[outn++] = *s++;
  out[outn] = 0;
}

/* put_text adds s inside a JSON string: quotes and backslashes escaped,
 * control characters replaced, cut to a readable length. */
static void put_text(const char *s) {
  for (size_t i = 0; s[i] && outn + 8 < sizeof out; i++) {
    if (i == 160) {
      put("...");
      return;
    }
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      out[outn++] = '\\';
      out[outn++] = (char)c;
    } else {
      out[outn++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
  }
  out[outn] = 0;
}

static const char *base(const char *s) {
  const char *b = s;
  for (; *s; s++)
    if (*s == '/') b = s + 1;
  return b;
}

enum verdict { NONE, FORCE, UNKNOWN };

static int allow_lease;

/* push_verdict looks at one command's argv. why gets the flag that forces. */
static enum verdict push_verdict(span argv, int dynamic, char *why, size_t whycap) {
  span it = argv, w;
  char word[512];
  if (!next(&it, &w) || !decode(w, word, sizeof word) || !str_eq(base(word), "git")) return NONE;
  /* git's own options before the subcommand; -C, -c and the long ones
   * written apart take the next word. */
  int sub = 0;
  while (next(&it, &w)) {
    if (!decode(w, word, sizeof word)) return dynamic ? UNKNOWN : NONE;
    if (word[0] != '-') {
      sub = 1;
      break;
    }
    if (str_eq(word, "-C") || str_eq(word, "-c") || str_eq(word, "--git-dir") || str_eq(word, "--work-tree") || str_eq(word, "--namespace"))
      next(&it, &w);
  }
  if (!sub) return NONE;
  if (!str_eq(word, "push")) return dynamic && word[0] == '$' ? UNKNOWN : NONE;
  int operands = 0, options = 1;
  while (next(&it, &w)) {
    if (!decode(w, word, sizeof word)) continue;
    const char *forced = 0;
    if (options && str_eq(word, "--")) {
      options = 0;
      continue;
    }
    if (options && word[0] == '-' && word[1] == '-') {
      if (str_eq(word, "--force") || str_eq(word, "--mirror")) forced = word;
      else if (!allow_lease && (str_eq(word, "--force-with-lease") || has_prefix(word, "--force-with-lease="))) forced = word;
    } else if (options && word[0] == '-' && word[1] != 0) {
      for (const char *c = word + 1; *c; c++)
        if (*c == 'f') forced = word;
    } else {
      if (operands++ > 0 && word[0] == '+') forced = word; /* a refspec after the repository */
    }
    if (forced) {
      size_t i = 0;
      for (; forced[i] && i + 1 < whycap; i++) why[i] = forced[i];
      why[i] = 0;
      return FORCE;
    }
  }
  return dynamic ? UNKNOWN : NONE;
}

/* command_text joins argv's words with spaces into buf. */
static void command_text(span argv, char *buf, size_t cap) {
  span it = argv, w;
  char word[512];
  size_t n = 0;
  while (next(&it, &w) && decode(w, word, sizeof word)) {
    if (n > 0 && n + 1 < cap) buf[n++] = ' ';
    for (size_t i = 0; word[i] && n + 1 < cap; i++) buf[n++] = word[i];
  }
  buf[n] = 0;
}

static int decide(const char *req, uint64_t n) {
  span root = {req, req + n}, shell, parsed, commands, cmd, argv, dyn;
  if (!get(root, "shell", &shell)) {
    ph_output("{\"outcome\":\"abstain\"}");
    return 0;
  }
  char buf[512];
  span config, lease; /* [plugin.config] arrives in the request too */
  allow_lease = get(root, "config", &config) && get(config, "allow_force_with_lease", &lease) && is_true(lease);
  int unknown = 0;
  if (get(shell, "commands", &commands)) {
    span it = commands;
    while (next(&it, &cmd)) {
      if (!get(cmd, "argv", &argv)) continue;
      int dynamic = get(cmd, "dynamic", &dyn) && is_true(dyn);
      char why[64];
      switch (push_verdict(argv, dynamic, why, sizeof why)) {
        case FORCE:
          command_text(argv, buf, sizeof buf);
          outn = 0;
          put("{\"outcome\":\"reject\",\"reason\":\"no force-push (");
          put_text(why);
          put("): ");
          put_text(buf);
          put("\"}");
          ph_output(out);
          return 0;
        case UNKNOWN:
          unknown = 1;
          break;
        case NONE:
          break;
      }
    }
  }
  span source;
  int unparsed = get(shell, "parsed", &parsed) && !is_true(parsed);
  if (unknown || (unparsed && get(shell, "source", &source) && contains(source, "push"))) {
    ph_output("{\"outcome\":\"ask\",\"reason\":\"a git push whose arguments are not known until it runs may force-push\"}");
    return 0;
  }
  ph_output("{\"outcome\":\"abstain\"}");
  return 0;
}

PH_EXPORT("permhost_decide") int32_t permhost_decide(void) {
  uint64_t n;
  const char *req = ph_input(&n);
  if (!req) {
    ph_error("no-force-push: no memory for the request");
    return 1;
  }
  return decide(req, n);
}

PH_EXPORT("permhost_abi") int32_t permhost_abi(void) {
  ph_output("{\"major\":1,\"minor\":0}");
  return 0;
}

PH_EXPORT("permhost_describe") int32_t permhost_describe(void) {
  ph_output("{\"name\":\"no-force-push\",\"version\":\"1.0.0\","
            "\"description\":\"Rejects git push --force, -f, --mirror, +refspecs and (unless allowed) --force-with-lease\","
            "\"configKeys\":[\"allow_force_with_lease\"]}");
  return 0;
}

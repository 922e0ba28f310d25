// permhost leader's web page: no framework, no inline script (the CSP
// forbids it). Cards arrive rendered by the server (every peer text
// escaped there); this script places them, counts down, and posts answers
// with the CSRF token.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const pending = document.getElementById("pending");
  const resolved = document.getElementById("resolved");
  const toast = document.getElementById("toast");
  const conn = document.getElementById("conn");

  function fragment(html) {
    const t = document.createElement("template");
    t.innerHTML = html;
    return t.content.firstElementChild;
  }
  function count() {
    const n = pending.querySelectorAll("article.req").length;
    document.getElementById("count").textContent = String(n);
    const empty = pending.querySelector(".empty");
    if (empty) empty.hidden = n > 0;
  }
  function say(msg) { toast.textContent = msg; }

  function post(path, body) {
    return fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
  }

  function answer(card, button) {
    const seq = Number(card.dataset.seq);
    const said = card.querySelector("input.said").value;
    card.querySelectorAll("button.opt").forEach(b => { b.disabled = true; });
    post("/api/answer", { seq: seq, option: Number(button.dataset.index), said: said })
      .then(r => r.json().then(j => ({ ok: r.ok, j: j })))
      .then(({ ok, j }) => {
        if (!ok) {
          card.querySelector(".status").textContent = j.error || "refused";
          say("#" + seq + ": " + (j.error || "refused"));
        }
      })
      .catch(e => { say("#" + seq + ": " + e); });
  }

  pending.addEventListener("click", ev => {
    const b = ev.target.closest("button.opt");
    if (!b || b.disabled) return;
    answer(b.closest("article.req"), b);
  });

  function tick() {
    const now = performance.now();
    pending.querySelectorAll("article.req[data-left-ms]").forEach(card => {
      const left = Number(card.dataset.leftMs) - (now - Number(card.dataset.got));
      const el = card.querySelector(".countdown");
      if (left > 0) {
        el.textContent = Math.ceil(left / 1000) + " s left, then the worker's builtin policy decides";
      } else if (!el.classList.contains("expired")) {
        el.classList.add("expired");
        el.textContent = "deadline passed: the worker's builtin policy decides";
        card.querySelectorAll("button.opt").forEach(b => { b.disabled = true; });
      }
    });
  }
  setInterval(tick, 250);

  const es = new EventSource("/events");
  es.onopen = () => { conn.textContent = "live"; conn.dataset.state = "live"; };
  es.onerror = () => { conn.textContent = "reconnecting…"; conn.dataset.state = "down"; };
  es.addEventListener("add", ev => {
    const card = fragment(ev.data);
    card.dataset.got = String(performance.now());
    const old = document.getElementById(card.id);
    if (old) old.replaceWith(card); else pending.appendChild(card);
    tick(); count();
  });
  es.addEventListener("remove", ev => {
    const card = document.getElementById("req-" + ev.data);
    if (card) card.remove();
    count();
  });
  es.addEventListener("resolved", ev => {
    const li = fragment(ev.data);
    const old = resolved.querySelector('li[data-seq="' + li.dataset.seq + '"]');
    if (old) old.remove();
    resolved.prepend(li);
    while (resolved.children.length > 200) resolved.lastElementChild.remove();
  });

  // Tabs.
  const views = { pending: "pending-view", history: "history-view", grants: "grants-view" };
  function show(name) {
    for (const k in views) {
      document.getElementById(views[k]).hidden = k !== name;
      document.getElementById("tab-" + k).classList.toggle("active", k === name);
    }
    if (name === "history") loadHistory();
    if (name === "grants") loadGrants();
  }
  for (const k in views) document.getElementById("tab-" + k).addEventListener("click", () => show(k));

  function loadInto(id, url) {
    return fetch(url, { credentials: "same-origin" }).then(r => r.text()).then(html => {
      const el = document.getElementById(id);
      el.replaceChildren();
      const t = document.createElement("template");
      t.innerHTML = html;
      el.appendChild(t.content);
    });
  }
  const filters = document.getElementById("filters");
  function loadHistory() {
    const q = new URLSearchParams(new FormData(filters));
    return loadInto("history", "/history?" + q.toString());
  }
  filters.addEventListener("submit", ev => { ev.preventDefault(); loadHistory(); });
  function loadGrants() { return loadInto("grants", "/grants"); }
  document.getElementById("grants").addEventListener("click", ev => {
    const b = ev.target.closest("button.revoke");
    if (!b) return;
    post("/api/revoke", { id: b.dataset.id }).then(r => r.json()).then(j => {
      say(j.error ? "revoke: " + j.error : "revoked");
      loadGrants();
    });
  });
  document.getElementById("new-link").addEventListener("click", () => {
    post("/api/login-link", {}).then(r => r.text()).then(t => { say("one-time login link for another device: " + t.trim()); });
  });
})();

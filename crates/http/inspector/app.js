// The mnemo inspector. Every view asks the workspace's HTTP API and draws
// the answer with DOM nodes whose text is set as text: memory and
// transcripts are untrusted, so nothing they hold is ever parsed as markup.
"use strict";

const TOKEN_KEY = "mnemo-inspector-token";
// `/v1/workspaces/{id}/` on a multi-tenant server, `/` on one workspace.
const tenant = location.pathname.match(/^\/v1\/workspaces\/([^/]+)\/?$/);
const API = tenant ? `/v1/workspaces/${tenant[1]}` : "/v1";

// The token comes in the address's fragment (never sent to a server),
// and is kept for this tab only; the address is then rewritten without it.
function takeToken() {
  const m = location.hash.match(/^#token=([^&]*)/);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + "#/memory");
  }
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

// ---- DOM helpers: text is always text ----
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}
function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const view = () => document.getElementById("view");
function show(...nodes) {
  const v = view();
  v.replaceChildren();
  append(v, nodes);
}
function status(text, isError) {
  const st = document.getElementById("status");
  st.textContent = text || "";
  st.className = isError ? "error" : "";
}
// A table in a box of its own that scrolls sideways when the table is
// wider than the window (a phone): the page itself never does.
function table(attrs, ...children) { return h("div", { class: "scroll" }, h("table", attrs, ...children)); }
function tag(text, kind) { return h("span", { class: `tag ${kind || ""}` }, text); }
function fmtNum(n) { return typeof n === "number" ? n.toLocaleString("en-US") : String(n ?? ""); }
function link(text, hash) { return h("a", { href: hash }, text); }
function sessionLink(key, params, text) {
  const q = new URLSearchParams(params || {}).toString();
  return link(text || key, `#/sessions/${encodeURIComponent(key)}${q ? "?" + q : ""}`);
}

// ---- the API ----
class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, "network", `the server cannot be reached (${e.message}); is mnemo serve still running?`);
  }
  let data = null;
  try { data = await resp.json(); } catch (_) { /* not JSON */ }
  if (!resp.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(resp.status, err.code || String(resp.status), err.message || resp.statusText);
  }
  return data;
}

function failed(e) {
  if (e.status === 401 || e.status === 403) {
    status(e.message, true);
    show(tokenForm(e));
    return;
  }
  status(e.message, true);
}

function tokenForm(e) {
  const input = h("input", { type: "password", id: "token", autocomplete: "off", "aria-label": "Token" });
  return h("section", {},
    h("h1", {}, e.status === 401 ? "This server needs a token" : "This token does not open the workspace"),
    h("p", {}, "Open the address that ", h("code", {}, "mnemo inspect"), " printed (it carries the token), or paste the server's token here. It is kept in this tab only."),
    h("form", { class: "row", onsubmit: (ev) => { ev.preventDefault(); sessionStorage.setItem(TOKEN_KEY, input.value.trim()); route(ev); } },
      input, h("button", { class: "primary", type: "submit" }, "Open")));
}

// ---- routing ----
const VIEWS = { memory: memoryView, changes: changesView, sessions: sessionsView, prompt: promptView, search: searchView, index: indexView };

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "memory", arg: parts[1], params: new URLSearchParams(query || "") };
}

async function route(ev) {
  takeToken();
  const r = parseHash();
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === r.name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const fn = VIEWS[r.name] || memoryView;
  status("loading…");
  try {
    // A view opened starts at its top (then scrolls to what it was
    // opened for, a message or an entry, itself).
    if (ev) window.scrollTo(0, 0);
    await fn(r);
    status("");
  } catch (e) {
    failed(e);
  }
  // After a move from a view to another (not on the page's first load,
  // where Tab starts at the top), keyboard and screen reader users land in
  // the view just opened, unless it put the focus in itself (as search
  // does in its box); the next Tab goes on inside it.
  const v = view();
  if (ev && !v.contains(document.activeElement)) v.focus({ preventScroll: true });
}
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  document.getElementById("where").textContent = tenant ? `workspace ${decodeURIComponent(tenant[1])}` : location.host;
  route(null);
});

// ---- Memory ----
async function memoryView(r) {
  const asOf = r.params.get("as_of") || "";
  const data = await api("GET", `/inspect/memory${asOf ? "?as_of=" + encodeURIComponent(asOf) : ""}`);
  const dateInput = h("input", { type: "date", id: "as-of", value: asOf, "aria-label": "As of" });
  const current = data.facts.filter((f) => f.current).length;
  show(
    h("h1", {}, asOf ? `Memory as it stood on ${asOf}` : "Memory"),
    h("form", { class: "row", onsubmit: (ev) => { ev.preventDefault(); location.hash = dateInput.value ? `#/memory?as_of=${dateInput.value}` : "#/memory"; } },
      h("label", { for: "as-of" }, "As of"), dateInput, h("button", { type: "submit" }, "Show"),
      asOf ? link("today", "#/memory") : null),
    data.notes.map((n) => h("p", { class: "muted" }, n)),
    h("section", { id: "facts" },
      h("h2", {}, `Facts (${current} current, ${data.facts.length - current} no longer true)`),
      data.facts.length ? factsTable(data.facts, !!asOf) : h("p", { class: "muted" }, "No facts yet: consolidation writes them to memory/facts.md.")),
    h("section", { id: "memory-md" }, h("h2", {}, "MEMORY.md"), memoryMdHistory(), memoryMdLines(data.memory_md_lines || [])),
    h("section", { id: "files" }, h("h2", {}, "Files under memory/"),
      asOf ? h("p", { class: "muted", id: "files-as-of" }, `As they are today: the daily logs and session notes dated after ${asOf} are left out; every other file shows its text of today.`) : null,
      filesTable(data.files, !!asOf)),
    asOf ? null : typedForm(),
  );
}

// MEMORY.md's changes in the audit log: the undos of consolidations and
// dreams (each consolidation's diff is under Changes).
function memoryMdHistory() {
  const chain = h("div", { class: "provenance", hidden: true });
  return h("div", {},
    h("button", { class: "history", "aria-expanded": "false", onclick: (ev) => toggleChain(ev.currentTarget, "MEMORY.md", chain) }, "history"),
    chain);
}

// MEMORY.md line by line, each with where it came from: the messages it
// was taken from (a click opens them in the session) and the entry of
// Changes that put it there.
function memoryMdLines(lines) {
  if (!lines.length) return h("pre", {}, "(empty)");
  return table({ class: "md-lines stack", id: "memory-md-lines" },
    h("thead", {}, h("tr", {}, h("th", { class: "wide-only" }, "line"), h("th", {}, "text"), h("th", {}, "from"))),
    h("tbody", {}, lines.map((l) => h("tr", { "data-line": l.line, class: l.text.trim() ? undefined : "blank" },
      h("td", { class: "muted wide-only" }, l.line),
      h("td", {}, h("div", { class: "text" }, l.text)),
      h("td", { class: "origin" }, lineOrigin(l))))));
}

const ENTRY_LABELS = { consolidation: "consolidation", undo: "restored by an undo", dream: "dream", dream_undo: "restored by a dream's undo" };
function lineOrigin(l) {
  if (!l.text.trim()) return null;
  if (!l.entry) return h("span", { class: "muted" }, "written by hand or before the history");
  return [
    l.session ? h("div", {}, sessionLink(l.session, { message: l.from, to: l.to }, `${l.session} ${l.from}..${l.to}`)) : null,
    h("div", { class: "muted" }, link(`${ENTRY_LABELS[l.kind] || l.kind} ${l.at}`, `#/changes?entry=${l.entry}`)),
  ];
}

function factState(f) {
  if (f.current) return tag("current", "current");
  if (f.retracted) return tag(`retracted${f.until ? " " + f.until : ""}`, "ended");
  return tag(`ended${f.until ? " " + f.until : ""}`, "ended");
}

function factsTable(facts, past) {
  return table({ class: "stack" },
    h("thead", {}, h("tr", {}, h("th", {}, "id"), h("th", {}, "fact"), h("th", {}, "state"), h("th", { class: "wide-only" }, "since"), h("th", {}, "from"), h("th", {}, ""))),
    h("tbody", {}, facts.map((f) => {
      const chain = h("div", { class: "provenance", hidden: true });
      const row = h("tr", { id: `fact-${f.id}`, "data-fact": f.id },
        h("td", {}, h("code", {}, f.id)),
        h("td", { class: "main" }, h("div", { class: "text" }, f.text),
          f.superseded_by ? h("div", { class: "muted" }, "replaced by ", h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); jumpToFact(f.superseded_by); } }, f.superseded_by)) : null,
          f.retracted_by ? h("div", { class: "muted" }, `retracted by ${f.retracted_by}`) : null,
          chain),
        h("td", {}, factState(f)),
        h("td", { class: "wide-only" }, f.since || ""),
        h("td", {}, f.sources.map((src) => h("div", {}, src.session
          ? sessionLink(src.session, { message: src.from, to: src.to }, `${src.session} ${src.from}..${src.to}`)
          : src.text))),
        h("td", {},
          h("button", { class: "history", "aria-expanded": "false", onclick: (ev) => toggleChain(ev.currentTarget, f.id, chain) }, "history"),
          past ? null : h("button", { class: "danger", onclick: () => forget(f.id) }, "forget")));
      return row;
    })));
}

function jumpToFact(id) {
  const row = document.getElementById(`fact-${id}`);
  if (!row) { status(`${id} is not shown here`); return; }
  row.scrollIntoView({ block: "center" });
  row.classList.add("highlight");
  setTimeout(() => row.classList.remove("highlight"), 2000);
}

async function toggleChain(button, id, box) {
  if (!box.hidden) { box.hidden = true; button.setAttribute("aria-expanded", "false"); return; }
  try {
    const hist = await api("GET", `/memory/history?name=${encodeURIComponent(id)}`);
    box.replaceChildren(h("ol", { class: "chain" }, hist.changes.map((c) => h("li", {},
      h("span", { class: "muted" }, c.at.replace("T", " ").replace("Z", ""), " "),
      tag(c.op, c.op === "refuse" ? "bad" : ""), " ",
      c.by ? `by ${c.by} ` : "",
      c.supersedes ? `replacing ${c.supersedes} ` : "",
      c.old ? h("span", {}, "«", c.old, "» → ") : "",
      c.new ? h("span", {}, "«", c.new, "»") : "",
      c.session ? h("span", {}, " from ", sessionLink(c.session, messageParams(c.messages), `${c.session} ${c.messages || ""}`)) : "",
      c.evidence ? h("div", { class: "muted" }, "evidence: ", h("q", {}, c.evidence)) : "",
      c.why ? h("div", { class: "muted" }, "why: ", c.why) : "",
    ))));
    if (!hist.changes.length) box.replaceChildren(h("p", { class: "muted" }, "No change is recorded about it (typed by a person, or older than the audit log)."));
    box.hidden = false;
    button.setAttribute("aria-expanded", "true");
  } catch (e) { failed(e); }
}

function messageParams(range) {
  const m = /^(\d+)\.\.(\d+)$/.exec(range || "");
  return m ? { message: m[1], to: m[2] } : {};
}

async function forget(name) {
  if (!confirm(`Forget ${name}? Its text is removed everywhere (the audit log keeps that it happened).`)) return;
  try {
    const out = await api("POST", "/memory/forget", { name });
    status(`forgot ${name} (${out.removed})`);
    await memoryView(parseHash());
  } catch (e) { failed(e); }
}

function filesTable(files, past) {
  if (!files.length) return h("p", { class: "muted" }, "memory/ is empty.");
  const reader = h("pre", { id: "file-text", hidden: true });
  return h("div", {},
    table({},
      h("thead", {}, h("tr", {}, h("th", {}, "file"), h("th", {}, "kind"), h("th", { class: "wide-only" }, "about"), h("th", { class: "wide-only" }, "written"), h("th", {}, ""))),
      h("tbody", {}, files.map((f) => h("tr", {},
        h("td", {}, h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); openFile(f.path, reader); } }, f.path)),
        h("td", {}, f.kind === "typed" ? `${f.type} memory` : f.kind, f.error ? h("div", { class: "tag bad" }, f.error) : null),
        h("td", { class: "wide-only" }, f.name ? h("b", {}, f.name, " ") : "", f.description || ""),
        h("td", { class: "wide-only muted" }, (f.modified || "").replace("T", " ").replace("Z", "")),
        h("td", {}, f.kind === "typed" ? typedActions(f, past) : null))))),
    reader);
}

// A typed memory's history (its saves, its dated lines ended) and forget.
function typedActions(f, past) {
  const chain = h("div", { class: "provenance", hidden: true });
  return h("div", {},
    h("button", { class: "history", "aria-expanded": "false", onclick: (ev) => toggleChain(ev.currentTarget, f.name || f.path, chain) }, "history"),
    past ? null : h("button", { class: "danger", onclick: () => forget(f.path) }, "forget"),
    chain);
}

async function openFile(path, box) {
  try {
    const got = await api("GET", `/memory/get?path=${encodeURIComponent(path)}`);
    box.replaceChildren(h("b", {}, `${got.path} (${got.total_lines} lines)`), "\n", got.text);
    box.hidden = false;
    box.scrollIntoView({ block: "nearest" });
  } catch (e) { failed(e); }
}

function typedForm() {
  const name = h("input", { id: "typed-name", required: true, "aria-label": "Name" });
  const kind = h("select", { id: "typed-type", "aria-label": "Type" }, ["user", "feedback", "project", "reference"].map((t) => h("option", {}, t)));
  const desc = h("input", { id: "typed-description", "aria-label": "Description", placeholder: "one line: what it holds" });
  const body = h("textarea", { id: "typed-body", required: true, "aria-label": "Text" });
  const replace = h("input", { type: "checkbox", id: "typed-replace" });
  return h("section", {}, h("h2", {}, "Save a typed memory"),
    h("form", { onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const out = await api("POST", "/memory/write", { mode: "typed", name: name.value, type: kind.value, description: desc.value || undefined, text: body.value, replace: replace.checked });
        status(`saved ${out.path} (${out.action})`);
        await memoryView(parseHash());
      } catch (e) { failed(e); }
    } },
    h("div", { class: "row" }, h("label", { for: "typed-name" }, "Name"), name, h("label", { for: "typed-type" }, "Type"), kind),
    h("div", { class: "row" }, h("label", { for: "typed-description" }, "Description"), desc),
    body,
    h("div", { class: "row" }, replace, h("label", { for: "typed-replace" }, "replace a memory of this name"), h("button", { class: "primary", type: "submit" }, "Save"))));
}

// ---- Changes ----
async function changesView(r) {
  const data = await api("GET", "/inspect/changes");
  show(
    h("h1", {}, "Changes to review"),
    h("section", { id: "history" }, h("h2", {}, `Consolidations and dreams (${data.entries.length} entries of memory/HISTORY.md)`),
      data.entries.length ? data.entries.map(historyEntry) : h("p", { class: "muted" }, "Nothing was consolidated yet.")),
    h("section", { id: "refused" }, h("h2", {}, `Facts the write path refused (${data.refused.length})`),
      data.refused.length ? auditTable(data.refused) : h("p", { class: "muted" }, "None.")),
    h("section", { id: "audit" }, h("h2", {}, `Audit log (${fmtNum(data.audit_total)} records${data.audit_total > data.audit.length ? `, newest ${data.audit.length}` : ""})`),
      data.audit.length ? auditTable(data.audit) : h("p", { class: "muted" }, "Empty.")),
  );
  // Opened from a session's timeline: that entry, open and in view.
  const wanted = r && r.params.get("entry");
  const target = wanted && document.getElementById(`entry-${wanted}`);
  if (target) {
    target.open = true;
    target.classList.add("highlight");
    target.scrollIntoView({ block: "start" });
  }
}

// What `memory/undo` calls each kind of entry it can reverse.
const UNDO_WHAT = { consolidation: "consolidation", dream: "dream", facts: "facts", flush: "facts" };
function historyEntry(e) {
  const what = UNDO_WHAT[e.kind];
  const undo = e.undo_next && what
    ? h("button", { class: "danger undo", onclick: () => undoChange(what) }, "undo")
    : null;
  return h("details", { class: `entry kind-${e.kind}`, id: `entry-${e.id}`, open: e.undo_next || undefined },
    h("summary", {}, h("span", { class: "muted" }, e.at, " "), tag(e.kind.replace("_", " "), e.undone ? "ended" : ""), e.undone ? " (undone) " : " ", e.title, " ", undo),
    diffBlock(e.body));
}

function diffBlock(text) {
  return h("pre", { class: "diff" }, (text || "").split("\n").map((l) => {
    const cls = l.startsWith("+++") || l.startsWith("---") || l.startsWith("@@") ? "hunk" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : null;
    return cls ? h("span", { class: cls }, l) : l + "\n";
  }));
}

async function undoChange(what) {
  const name = what === "facts" ? "round of memory/facts.md (its facts added are removed, its facts ended are current again)" : what;
  if (!confirm(`Undo the newest ${name}? The undo is recorded in memory/HISTORY.md and the audit log.`)) return;
  try {
    const out = await api("POST", "/memory/undo", { what });
    status(what === "facts"
      ? `undid the facts round of ${out.undone}: ${[
        out.removed && out.removed.length ? `removed ${out.removed.join(", ")}` : "",
        out.restored && out.restored.length ? `current again ${out.restored.join(", ")}` : "",
      ].filter(Boolean).join("; ") || `${out.lines} fact(s) changed back`}`
      : `undid the ${what} of ${out.undone}: ${out.lines} line(s) changed back`);
    await changesView();
  } catch (e) { failed(e); }
}

function auditTable(records) {
  return table({ class: "stack" },
    h("thead", {}, h("tr", {}, h("th", {}, "when"), h("th", {}, "what"), h("th", {}, "memory"), h("th", {}, "change"), h("th", { class: "wide-only" }, "from"))),
    h("tbody", {}, records.map((c) => h("tr", {},
      h("td", { class: "muted" }, c.at.replace("T", " ").replace("Z", "")),
      h("td", {}, tag(c.op, c.op === "refuse" ? "bad" : c.op === "delete" || c.op === "forget" ? "ended" : ""), h("div", { class: "muted" }, c.by)),
      h("td", {}, h("code", {}, c.memory), c.supersedes ? h("div", { class: "muted" }, `replacing ${c.supersedes}`) : null),
      h("td", {}, c.old ? h("div", { class: "text" }, "− ", c.old) : null, c.new ? h("div", { class: "text" }, "+ ", c.new) : null,
        c.why ? h("div", { class: "muted" }, "why: ", c.why) : null,
        c.evidence ? h("div", { class: "muted" }, "evidence: ", h("q", {}, c.evidence)) : null),
      h("td", { class: "wide-only" }, c.session ? sessionLink(c.session, messageParams(c.messages), `${c.session} ${c.messages || ""}`) : "")))));
}

// ---- Sessions ----
async function sessionsView(r) {
  if (r.arg) return timelineView(r.arg, r.params);
  const data = await api("GET", "/sessions");
  show(h("h1", {}, `Sessions (${data.sessions.length})`),
    data.sessions.length ? table({ id: "sessions" },
      h("thead", {}, h("tr", {}, h("th", {}, "session"), h("th", {}, "messages"), h("th", {}, "consolidated"), h("th", {}, "last activity"), h("th", { class: "wide-only" }, "log"))),
      h("tbody", {}, data.sessions.map((x) => h("tr", {},
        h("td", {}, sessionLink(x.key)),
        h("td", {}, fmtNum(x.messages)),
        h("td", {}, `${fmtNum(x.last_consolidated)} of ${fmtNum(x.messages)}`),
        h("td", { class: "muted" }, (x.updated_at || "").replace("T", " ")),
        h("td", { class: "wide-only muted" }, x.file)))))
      : h("p", { class: "muted" }, "No session yet."));
}

async function timelineView(key, params) {
  const q = new URLSearchParams();
  for (const k of ["from", "message"]) if (params.get(k)) q.set(k, params.get(k));
  const data = await api("GET", `/inspect/sessions/${encodeURIComponent(key)}${q.toString() ? "?" + q : ""}`);
  const lo = params.get("message") ? Number(params.get("message")) : null;
  const hi = params.get("to") ? Number(params.get("to")) : lo !== null ? lo + 1 : null;
  const last = data.from + data.lines.length - 1;
  const page = (from) => sessionLink(key, { from }, "");
  const nav = h("div", { class: "row" },
    h("span", { class: "muted" }, `lines ${fmtNum(data.from)}–${fmtNum(last)} of ${fmtNum(data.total_lines)}`),
    data.from > 1 ? append(page(1), ["« first"]) : null,
    data.from > 1 ? append(page(Math.max(1, data.from - 500)), ["‹ earlier"]) : null,
    last < data.total_lines ? append(page(last + 1), ["later ›"]) : null,
    last < data.total_lines ? append(page(Math.max(1, data.total_lines - 499)), ["last »"]) : null);
  show(
    h("h1", {}, `Session ${data.key}`),
    h("div", { class: "cards" },
      card("messages", fmtNum(data.messages)), card("consolidated", `${fmtNum(data.last_consolidated)}`),
      card("log size", `${(data.bytes / 1024).toFixed(1)} KiB`), card("compactions", fmtNum(data.marks.filter((m) => m.kind !== "cursor").length))),
    h("section", {}, h("h2", {}, "Prompt size over the session"), tokenChart(data), h("p", { class: "muted" },
      "Estimated tokens of the history after each message (4 characters a token); each compaction (orange) cuts it by the share its record counted, each consolidation moves the cursor (green); consolidations and flushes (dotted purple) and session notes (dotted pink) sit after the messages they cover; hover a line for its numbers. ",
      link("Build the next prompt", `#/prompt?session=${encodeURIComponent(key)}`))),
    h("section", {}, h("h2", {}, "Timeline"), nav,
      table({ id: "timeline" },
        h("thead", {}, h("tr", {}, h("th", {}, "line"), h("th", {}, "#"), h("th", {}, "who"), h("th", {}, "what"))),
        h("tbody", {},
          data.from === 1 ? eventsAfter(data.events, 0) : null,
          data.lines.map((l) => [timelineRow(l, lo, hi, data.last_consolidated), eventsAfter(data.events, l.line)]))),
      nav.cloneNode(true)),
  );
  const first = document.querySelector("tr.highlight");
  if (first) first.scrollIntoView({ block: "center" });
}

function card(label, value) { return h("div", { class: "card" }, h("b", {}, value), h("span", { class: "muted" }, label)); }

function timelineRow(l, lo, hi, cursor) {
  const inRange = l.ordinal !== undefined && lo !== null && l.ordinal >= lo && l.ordinal < hi;
  const cls = [inRange ? "highlight" : "", l.kind === "malformed" ? "malformed" : "", l.kind !== "message" && l.kind !== "malformed" ? "record" : ""].join(" ").trim();
  let who = l.kind === "message" ? h("span", { class: "role" }, l.role) : tag(l.kind, l.kind === "malformed" ? "bad" : "");
  return h("tr", { id: `line-${l.line}`, class: cls || undefined, "data-ordinal": l.ordinal },
    h("td", { class: "muted" }, l.line),
    h("td", { class: "muted" }, l.ordinal ?? "", l.ordinal !== undefined && l.ordinal < cursor ? h("div", { title: "in long-term memory" }, "✓") : null),
    h("td", {}, who, l.tool ? h("div", { class: "muted" }, l.tool) : null),
    h("td", {},
      l.detail ? h("div", { class: "muted" }, l.detail) : null,
      l.text ? h("div", { class: "text" }, l.text, l.cut ? "…" : "") : null,
      l.tool_calls && l.tool_calls.length ? l.tool_calls.map((c) => h("div", { class: "text" }, "→ ", c)) : null,
      l.stored_at ? storedResult(l.stored_at) : null,
      l.timestamp ? h("div", { class: "muted" }, l.timestamp) : null));
}

// What memory made of the session after a line: consolidations, flushes
// and undos (each opens its entry under Changes) and session notes (each
// opens the note).
const EVENT_LABELS = { consolidation: "consolidated", flush: "memory flush", undo: "undo", note: "session note" };
function eventsAfter(events, line) {
  return (events || []).filter((e) => e.after_line === line).map((e) => {
    const box = h("pre", { class: "note-text", hidden: true });
    const open = e.path
      ? h("a", { href: "#", class: "note-link", onclick: (ev) => { ev.preventDefault(); openInto(e.path, box); } }, e.path)
      : link("open in Changes", `#/changes?entry=${e.entry}`);
    return h("tr", { class: `event kind-${e.kind}`, "data-event": e.kind },
      h("td", {}),
      h("td", { class: "muted" }, e.from !== undefined ? `${e.from}..${e.to}` : ""),
      h("td", {}, tag(EVENT_LABELS[e.kind] || e.kind, "event")),
      h("td", {}, h("div", { class: "text" }, e.title), h("div", { class: "muted" }, `${e.at} UTC · `, open), box));
  });
}

async function openInto(path, box) {
  try {
    const got = await api("GET", `/memory/get?path=${encodeURIComponent(path)}`);
    box.replaceChildren(got.text);
    box.hidden = false;
  } catch (e) { failed(e); }
}

// A large tool result's preview is in the log; the whole is in a file
// beside it, opened on demand.
function storedResult(path) {
  const box = h("pre", { class: "stored", hidden: true });
  return h("div", { class: "muted" }, "a preview; the whole result is stored at ",
    h("a", { href: "#", class: "stored-link", onclick: (ev) => { ev.preventDefault(); openInto(path, box); } }, path), box);
}

function tokenChart(data) {
  const pts = data.chart;
  if (!pts.length) return h("p", { class: "muted" }, "No message yet.");
  const W = 800, H = 220, L = 56, B = 24, T = 10, R = 10;
  const maxX = Math.max(1, data.messages);
  const maxY = Math.max(1, ...pts.map((p) => p.tokens));
  const x = (m) => L + (m / maxX) * (W - L - R);
  const y = (t) => T + (1 - t / maxY) * (H - T - B);
  const path = pts.map((p, i) => `${i ? "L" : "M"}${x(p.message + 1).toFixed(1)},${y(p.tokens).toFixed(1)}`).join(" ");
  const marks = data.marks.map((m) => m.kind === "cursor"
    ? s("line", { x1: x(m.message), x2: x(m.message), y1: T, y2: H - B, stroke: "#2e7d4f", "stroke-dasharray": "3 3" }, s("title", {}, `consolidated up to message ${m.cursor}`))
    : s("g", {}, s("line", { x1: x(m.message), x2: x(m.message), y1: T, y2: H - B, stroke: "#e07b00", "stroke-width": 2 }),
      s("title", {}, `${m.kind} at message ${m.message}: the prompt went from ${m.tokens_before} to ${m.tokens_after} tokens`)));
  // Consolidations, flushes and notes: one mark where each follows the messages.
  const seen = new Set();
  const events = (data.events || []).filter((e) => e.kind !== "undo" && !seen.has(`${e.kind}@${e.to}`) && seen.add(`${e.kind}@${e.to}`))
    .map((e) => s("g", { class: `event-mark kind-${e.kind}` },
      s("line", { x1: x(e.to), x2: x(e.to), y1: T, y2: H - B, stroke: e.kind === "note" ? "#a5527a" : "#8a4fc7", "stroke-dasharray": "1 3", "stroke-width": 2 }),
      s("title", {}, `${EVENT_LABELS[e.kind] || e.kind} after message ${e.to}: ${e.title}`)));
  const ticks = [0, 0.5, 1].map((f) => s("g", {}, s("line", { x1: L, x2: W - R, y1: y(maxY * f), y2: y(maxY * f), stroke: "currentColor", "stroke-opacity": 0.12 }),
    s("text", { x: L - 6, y: y(maxY * f) + 4, "text-anchor": "end" }, fmtNum(Math.round(maxY * f)))));
  return s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `prompt tokens over ${data.messages} messages, ${data.marks.length} compactions and cursor moves` },
    ticks,
    s("path", { d: path, fill: "none", stroke: "#2f5d8a", "stroke-width": 2 }),
    marks, events,
    s("text", { x: L, y: H - 6 }, "message 0"),
    s("text", { x: W - R, y: H - 6, "text-anchor": "end" }, `message ${fmtNum(data.messages)}`));
}

// ---- Prompt ----
const PART_COLOURS = ["#2f5d8a", "#8a4fc7", "#2e7d4f", "#c77d1a", "#b3261e", "#3b9db3", "#6d6d6d", "#a5527a"];

async function promptView(r) {
  const sessions = (await api("GET", "/sessions")).sessions;
  const chosen = r.params.get("session") || (sessions[0] && sessions[0].key) || "";
  const select = h("select", { id: "prompt-session", "aria-label": "Session" }, sessions.map((x) => h("option", { value: x.key, selected: x.key === chosen || undefined }, x.key)));
  const draft = h("textarea", { id: "prompt-message", "aria-label": "Draft message", placeholder: "a draft user message (optional)" }, r.params.get("message") || "");
  const out = h("div", { id: "prompt-out" });
  const build = async () => {
    if (!select.value) return;
    status("building the request…");
    try {
      const rep = await api("POST", `/sessions/${encodeURIComponent(select.value)}/context`, { message: draft.value });
      out.replaceChildren(promptReport(rep));
      status("");
    } catch (e) { failed(e); }
  };
  show(h("h1", {}, "The prompt"),
    h("p", { class: "muted" }, "The request the engine would send for the next turn of a session, part by part (", h("code", {}, "mnemo context --json"), ")."),
    sessions.length ? h("form", { onsubmit: (ev) => { ev.preventDefault(); build(); } },
      h("div", { class: "row" }, h("label", { for: "prompt-session" }, "Session"), select), draft,
      h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Build"))) : h("p", { class: "muted" }, "No session yet."),
    out);
  if (sessions.length) await build();
}

function promptReport(rep) {
  const win = rep.thresholds && rep.thresholds.context_window ? rep.thresholds.context_window : rep.total_tokens;
  const parts = rep.parts.filter((p) => p.tokens > 0);
  const bar = h("div", { class: "bar", role: "img", "aria-label": `${rep.total_tokens} of ${win} tokens` },
    parts.map((p, i) => h("span", { title: `${p.name}: ${p.tokens} tokens`, style: undefined, "data-part": p.name })));
  // Widths and colours set as properties: the policy allows no inline style attribute.
  [...bar.children].forEach((el, i) => { el.style.width = `${(100 * parts[i].tokens) / Math.max(win, rep.total_tokens)}%`; el.style.background = PART_COLOURS[i % PART_COLOURS.length]; });
  // Every part in the legend, an empty one too (no summary yet, say).
  const legend = h("div", { class: "legend" }, rep.parts.map((p) => {
    const i = parts.indexOf(p);
    const sw = h("span", { class: "swatch" });
    if (i >= 0) sw.style.background = PART_COLOURS[i % PART_COLOURS.length];
    return h("span", { class: i >= 0 ? undefined : "muted", "data-part": p.name }, sw, `${p.name} ${fmtNum(p.tokens)}`);
  }));
  const recall = rep.recall;
  return h("div", {},
    h("section", { id: "prompt-parts" }, h("h2", {}, `${fmtNum(rep.total_tokens)} tokens of a ${fmtNum(win)}-token window (${rep.model}${rep.exact ? ", counted" : ", estimated"})`),
      h("p", { class: "muted" }, "summary: the last compaction's summary (and the files it restored); tail: the messages kept as they were."),
      bar, legend,
      rep.thresholds ? h("p", { class: "muted" }, `autocompact at ${fmtNum(rep.thresholds.autocompact)}, memory flush at ${fmtNum(rep.thresholds.flush)}, blocking at ${fmtNum(rep.thresholds.blocking)}`) : null,
      rep.memory_truncated ? h("p", { class: "tag ended" }, "MEMORY.md was cut to its cap") : null,
      (rep.notes || []).map((n) => h("p", { class: "muted" }, n))),
    h("section", {}, h("h2", {}, "Recalled memory files"),
      rep.selected_memories.length ? h("ul", {}, rep.selected_memories.map((m) => h("li", {}, m))) : h("p", { class: "muted" }, "None selected."),
      recall ? h("div", { class: "muted", id: "prompt-recall" },
        h("div", {}, recallHow(recall)),
        recall.query ? h("div", {}, "side query searched for: ", h("q", {}, recall.query)) : null,
        recall.found && recall.found.length ? h("div", {}, "search found: ", recall.found.join(", ")) : null,
        recall.error ? h("div", {}, "why none: ", recall.error) : null,
        recall.timed_out ? h("div", {}, "the side query ran out of time") : null) : null),
    h("section", {}, h("h2", {}, "System prompt"), h("pre", { id: "prompt-system" }, rep.system)),
    h("section", {}, h("h2", {}, `Messages (${rep.messages.length})`),
      table({}, h("tbody", {}, rep.messages.map((m) => h("tr", {}, h("td", { class: "role" }, m.role),
        h("td", {}, h("div", { class: "text" }, typeof m.content === "string" ? m.content : m.content ? JSON.stringify(m.content) : ""),
          (m.tool_calls || []).map((c) => h("div", { class: "text muted" }, `→ ${c.function.name}(${typeof c.function.arguments === "string" ? c.function.arguments : JSON.stringify(c.function.arguments)})`)))))))),
    h("section", {}, h("h2", {}, `Tools (${rep.tools.length})`), h("p", {}, rep.tools.map((t) => t.name || (t.function && t.function.name) || "").join(", "))));
}

// How the recalled files were chosen: by the model from a manifest of
// file headers, or by memory search alone.
function recallHow(recall) {
  const manifest = `a manifest of ${fmtNum(recall.manifest_files)} memory file(s)`;
  if (!recall.asked_model) return `chosen by memory search with the conversation (no side query asks the model: recall_mode) from ${manifest}`;
  if (recall.from_search) return `the model was asked to choose from ${manifest}, and ${recall.timed_out ? "was late" : "failed"}: the files memory search found are recalled instead`;
  return `chosen by the model's side query from ${manifest}`;
}

// ---- Search ----
async function searchView(r) {
  // A text area, not an input: a query can be a dialogue, one turn a line
  // (`Ann: …`), which the search reads for its focus. Enter searches,
  // Shift+Enter starts a line.
  const qIn = h("textarea", { id: "search-query", rows: 1, "aria-label": "Query", placeholder: "words, or a dialogue one turn a line (Shift+Enter)",
    onkeydown: (ev) => { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); ev.target.form.requestSubmit(); } } },
  r.params.get("q") || "");
  const maxIn = h("input", { id: "search-max", type: "number", min: 1, max: 100, value: r.params.get("n") || 10, "aria-label": "Results" });
  const asOf = h("input", { id: "search-as-of", type: "date", value: r.params.get("as_of") || "", "aria-label": "As of" });
  const rerank = h("input", { id: "search-rerank", type: "checkbox", checked: r.params.get("rerank") === "1" || undefined });
  const wantedMode = r.params.get("mode") || "hybrid";
  const mode = h("select", { id: "search-mode", "aria-label": "Mode" },
    [["hybrid", "hybrid (keywords and meaning)"], ["keyword", "keywords (BM25)"], ["vector", "meaning (vectors)"]]
      .map(([v, label]) => h("option", { value: v, selected: v === wantedMode || undefined }, label)));
  const out = h("div", { id: "search-out" });
  const run = async () => {
    if (!qIn.value.trim()) return;
    status("searching…");
    try {
      const res = await api("POST", "/memory/search", { query: qIn.value, mode: mode.value, max_results: Number(maxIn.value) || 10, as_of: asOf.value || undefined, rerank: rerank.checked, explain: true });
      out.replaceChildren(searchResults(res));
      status("");
    } catch (e) { failed(e); }
  };
  show(h("h1", {}, "Search"),
    h("form", { class: "row", role: "search", onsubmit: (ev) => { ev.preventDefault(); run(); } },
      qIn, h("label", { for: "search-mode" }, "by"), mode, h("label", { for: "search-max" }, "results"), maxIn, h("label", { for: "search-as-of" }, "as of"), asOf,
      rerank, h("label", { for: "search-rerank" }, "re-rank with the chat model"), h("button", { class: "primary", type: "submit" }, "Search")),
    out);
  qIn.focus();
  if (qIn.value) await run();
}

function searchResults(res) {
  return h("div", {},
    h("p", { class: "muted" }, `${res.results.length} hit(s), ${res.mode} search`,
      res.reranked !== undefined ? `, ${res.reranked ? "re-ranked by the chat model" : "not re-ranked"}` : ""),
    // What the search read in the query: the dates it lifts hits from, and
    // a dialogue's focus (its latest turn, weighed most).
    res.dates && res.dates.length || res.focus ? h("dl", { class: "query-reading", id: "search-reading" },
      res.dates && res.dates.length ? [h("dt", {}, "dates in the query"), h("dd", {}, res.dates.join(", "))] : null,
      res.focus ? [h("dt", {}, "focus (the dialogue's latest turn)"), h("dd", {}, h("q", {}, res.focus))] : null) : null,
    (res.warnings || []).map((w) => h("p", { class: "tag ended" }, w)),
    h("div", { class: "legend" }, h("span", {}, h("span", { class: "swatch kwsw" }), "keyword (BM25)"), h("span", {}, h("span", { class: "swatch vecsw" }), "vector (cosine)")),
    res.results.map((hit, i) => {
      const p = hit.parts || {};
      const kw = h("span", { class: "kw" }), vec = h("span", { class: "vec" });
      kw.style.width = `${50 * (p.keyword || 0)}%`; vec.style.width = `${50 * (p.vector || 0)}%`;
      const reader = h("pre", { class: "cited", hidden: true });
      return h("div", { class: "hit", "data-citation": hit.citation },
        h("div", { class: "row" }, h("b", {}, `${i + 1}.`),
          h("a", { href: "#", class: "citation", onclick: (ev) => { ev.preventDefault(); openCitation(hit, reader); } }, hit.citation),
          h("span", {}, `score ${hit.score.toFixed(3)}`),
          h("span", { class: "score", title: `keyword ${p.keyword ?? "–"}, vector ${p.vector ?? "–"}` }, kw, vec),
          h("span", { class: "parts muted" }, scoreParts(p)),
          hit.date ? h("span", { class: "muted" }, hit.date) : null,
          hit.validity ? tag(hit.validity.current ? "current" : hit.validity.note || "no longer true", hit.validity.current ? "current" : "ended") : null,
          hit.session_key ? sessionLink(hit.session_key, { from: hit.start_line }, "in the session") : null),
        h("div", { class: "text" }, hit.snippet),
        reader);
    }));
}

function scoreParts(p) {
  const out = [`keyword ${p.keyword ?? "–"}`, `vector ${p.vector ?? "–"}`];
  if (p.fused !== undefined) out.push(`fused ${p.fused}`);
  if (p.date !== undefined) out.push(`date lift ${p.date}`);
  if (p.decay !== undefined) out.push(`age ×${p.decay}`);
  if (p.exact) out.push("exact match");
  if (p.before_rerank !== undefined) out.push(`#${p.before_rerank} before re-ranking`);
  if (p.judged !== undefined) out.push(`judged ${p.judged.toFixed(2)}`);
  return out.join(" · ");
}

async function openCitation(hit, box) {
  try {
    const got = await api("GET", `/memory/get?path=${encodeURIComponent(hit.path)}&from=${hit.start_line}&lines=${hit.end_line - hit.start_line + 1}`);
    box.replaceChildren(got.text);
    box.hidden = false;
  } catch (e) { failed(e); }
}

// ---- Index and evaluation ----
async function indexView() {
  const data = await api("GET", "/inspect/index");
  const st = data.status;
  show(h("h1", {}, "Index"),
    h("div", { class: "cards", id: "index-status" },
      card("backend", st.backend), card("mode", st.mode), card("files", fmtNum(st.files)), card("chunks", fmtNum(st.chunks)),
      card("vectors", fmtNum(st.vectors)), card("model", st.model || "none (keywords only)")),
    h("p", { class: "muted" }, st.location, st.dirty ? " — files changed since the last sync" : "", st.needs_full_reindex ? " — needs a full reindex (mnemo index --force)" : ""),
    h("section", { id: "evals" }, h("h2", {}, "Evaluation reports"),
      data.evals.length ? data.evals.map(evalReport)
        : h("p", { class: "muted" }, "None saved: run ", h("code", {}, "mnemo eval … --save"), " to keep a report in .mnemo/eval/.")));
}

// The report's numbers in 0..1 (scores, rates), as bars.
function evalReport(e) {
  const rows = [];
  const SKIP = new Set(["settings", "timings", "questions", "counts", "warnings", "config"]);
  (function walk(v, path) {
    if (rows.length >= 40) return;
    if (typeof v === "number" && v >= 0 && v <= 1) rows.push([path, v]);
    else if (Array.isArray(v)) v.slice(0, 8).forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === "object") Object.entries(v).forEach(([k, x]) => { if (!SKIP.has(k)) walk(x, path ? `${path}.${k}` : k); });
  })(e.report.overall || e.report, e.report.overall ? "overall" : "");
  const W = 800, row = 18, L = 330;
  const chart = rows.length ? s("svg", { class: "chart", viewBox: `0 0 ${W} ${rows.length * row + 6}`, role: "img", "aria-label": `${rows.length} scores of ${e.name}` },
    rows.map(([k, v], i) => s("g", {},
      s("text", { x: L - 6, y: i * row + 13, "text-anchor": "end" }, k.length > 48 ? "…" + k.slice(-47) : k),
      s("rect", { x: L, y: i * row + 3, width: (W - L - 60) * v, height: row - 6, fill: "#2f5d8a" }),
      s("text", { x: L + (W - L - 60) * v + 4, y: i * row + 13 }, v.toFixed(3))))) : h("p", { class: "muted" }, "No score between 0 and 1 in it.");
  return h("details", { open: true }, h("summary", {}, h("b", {}, e.name), h("span", { class: "muted" }, ` ${e.modified}`)), chart);
}

// dsh web: the page. It lists the sessions on disk, opens one, shows what the session
// reports (the same records as its log, and the answer as it streams) and sends prompts,
// stops and answers. Text from the session is always inserted as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

// The token comes in the printed address's fragment (never sent to the server) and is kept
// in this origin's storage; every request sends it as a bearer token. No cookie is used.
const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.get("token")) {
  localStorage.setItem("dsh-token", fragment.get("token"));
  history.replaceState(null, "", location.pathname);
}
const TOKEN = localStorage.getItem("dsh-token") || "";
const state = { id: null, cwd: null, source: null, busy: false, calls: new Map(),
  live: { text: null, reasoning: null }, asks: new Map(), listing: null,
  usage: { tokens: 0, cost: 0, priced: false }, skills: [], agents: new Map(), imageInput: false,
  attached: [] };
// The most of a command's live output kept on screen; its result has it all.
const OUTPUT_CHARS = 64 * 1024;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// A request with a JSON body (or, for a Blob, its bytes as they are).
async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const raw = body instanceof Blob;
  if (body) headers["Content-Type"] = raw ? (body.type || "application/octet-stream") : "application/json";
  const response = await fetch(path, { method, headers, body: body ? (raw ? body : JSON.stringify(body)) : undefined });
  if (response.status === 401) {
    throw new Error("Not signed in: open the address `dsh web` printed (this server's token changes each time it starts).");
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
  return answer;
}

// The sidebar: every session on disk, by workspace; the search filters by title, task and
// folder.
async function loadSessions() {
  state.listing = await api("GET", "/api/sessions");
  state.defaultCwd = state.listing.cwd;
  renderSessions();
}

// The sidebar from the listing fetched last; the search filters it here, without asking the
// server on every key.
function renderSessions() {
  const listing = state.listing || { workspaces: [] };
  const query = $("search").value.trim().toLowerCase();
  const nav = $("sessions");
  nav.replaceChildren();
  for (const workspace of listing.workspaces) {
    const sessions = workspace.sessions.filter((s) =>
      !query || sessionName(s).toLowerCase().includes(query) || workspace.cwd.toLowerCase().includes(query));
    if (!sessions.length) continue;
    nav.append(el("h3", {}, workspace.cwd));
    for (const session of sessions) {
      const link = el("a", {
        href: `#session=${encodeURIComponent(session.id)}`,
        class: session.id === state.id ? "open" : "",
        "data-session": session.id,
        onclick: (event) => { event.preventDefault(); openSession(workspace.cwd, session.id); },
      }, sessionName(session) || "(no task yet)",
        el("small", {}, `${new Date(session.createdAt).toLocaleString()} · ${session.turns} turns`));
      const tools = el("span", { class: "session-tools" },
        el("button", { type: "button", title: "Fork: a new session from a copy of this one",
          onclick: () => forkSession(workspace.cwd, session.id) }, "Fork"),
        el("button", { type: "button", title: "Rename: the title this list shows",
          onclick: () => renameSession(workspace.cwd, session) }, "Rename"),
        el("button", { type: "button", title: "Delete this session",
          onclick: () => deleteSession(workspace.cwd, session) }, "Delete"));
      nav.append(el("div", { class: "session" }, link, tools));
    }
  }
}

async function openSession(cwd, resume) {
  let opened;
  try { opened = await api("POST", "/api/sessions", { cwd, resume }); }
  catch (error) {
    // No key yet: ask for one, then the session can be opened again.
    if (/no API key/.test(error.message)) askForKey();
    throw error;
  }
  follow(opened.id, cwd);
}

async function forkSession(cwd, id) {
  try {
    const opened = await api("POST", "/api/sessions", { cwd, resume: id, fork: true });
    follow(opened.id, cwd);
  } catch (error) { say("error", error.message); }
}

// What the list calls a session: the title it was given, else its first task.
const sessionName = (session) => session.title || session.firstTask;

async function renameSession(cwd, session, given) {
  const title = given ?? window.prompt("The session's title (empty: none, the first task is shown)",
    session.title || session.firstTask);
  if (title === null) return;
  try {
    await api("POST", `/api/sessions/${encodeURIComponent(session.id)}/rename`, { cwd, title });
    if (session.id === state.id) {
      say("notice", title.trim() ? `The session is titled "${title.trim()}".` : "The session's title is taken away.");
    }
    await loadSessions();
  } catch (error) { say("error", error.message); }
}

async function deleteSession(cwd, session) {
  if (!window.confirm(`Delete the session "${sessionName(session) || session.id}"? Its log is removed for good.`)) return;
  try {
    await api("POST", `/api/sessions/${encodeURIComponent(session.id)}/delete`, { cwd });
    await loadSessions();
  } catch (error) { say("error", error.message); }
}

// Reads the session's reports: everything so far, then each as it comes.
function follow(id, cwd) {
  if (state.source) state.source.close();
  Object.assign(state, { id, cwd, calls: new Map(), live: { text: null, reasoning: null },
    busy: false, asks: new Map(), usage: { tokens: 0, cost: 0, priced: false }, agents: new Map(),
    attached: [] });
  drawAttached();
  $("ask").close();
  $("todos").replaceChildren();
  $("agents").replaceChildren();
  $("usage").textContent = "";
  sessionStorage.setItem("dsh-session", JSON.stringify({ id, cwd }));
  history.replaceState(null, "", `#session=${encodeURIComponent(id)}`);
  $("transcript").replaceChildren();
  $("session-title").textContent = `${id} · ${cwd}`;
  setBusy(false);
  $("send").disabled = false;
  $("rewind").disabled = false;
  const source = new EventSource(`/api/sessions/${encodeURIComponent(id)}/events?token=${encodeURIComponent(TOKEN)}`);
  source.onmessage = (message) => show(JSON.parse(message.data));
  source.onerror = () => {
    // The browser reconnects by itself and is sent only what it missed; a server that
    // restarted does not know the session, and the stream stays closed.
    $("session-state").textContent = source.readyState === EventSource.CLOSED
      ? "disconnected: the server stopped; open the address it prints when it starts again"
      : "reconnecting…";
  };
  source.onopen = () => { $("session-state").textContent = state.busy ? "working…" : ""; };
  state.source = source;
  loadSessions().catch(() => {});
}

// The session's permission mode and model; changing either reopens it between turns.
function showSettings(event) {
  state.skills = event.skills || [];
  state.imageInput = !!event.imageInput;
  $("attach").disabled = !state.imageInput;
  $("attach").title = state.imageInput ? "Attach images (or paste or drop them here)"
    : "This session's model does not take images";
  const modes = event.modes || [];
  const select = $("mode");
  select.replaceChildren(...modes.map((mode) => el("option", { value: mode }, mode)));
  select.value = event.mode;
  if (document.activeElement !== $("model")) $("model").value = event.model;
}

async function changeSettings(change) {
  try {
    await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/settings`, change);
  } catch (error) {
    say("error", error.message);
  }
}

function setBusy(busy) {
  state.busy = busy;
  $("mode").disabled = busy;
  $("rewind").disabled = busy || !state.id;
  $("close").disabled = !state.id;
  $("model").disabled = busy;
  $("stop").disabled = !busy;
  $("session-state").textContent = busy ? "working…" : "";
}

function say(kind, text) {
  const node = el("div", { class: `message ${kind}` }, text);
  $("transcript").append(node);
  node.scrollIntoView({ block: "end" });
  return node;
}

function show(event) {
  switch (event.kind) {
    case "record": return showRecord(event.record, event);
    case "delta": {
      if (event.agent) return;
      const kind = event.reasoning ? "reasoning" : "text";
      if (!state.live[kind]) state.live[kind] = say(kind === "reasoning" ? "reasoning" : "assistant", "");
      state.live[kind].textContent += event.text || event.reasoning || "";
      return;
    }
    case "notice": return say("notice", event.text);
    case "output": {
      const call = state.calls.get(callKey(event.agent, event.callId));
      if (call) call.output.textContent = (call.output.textContent + event.text).slice(-OUTPUT_CHARS);
      return;
    }
    case "busy": return setBusy(event.busy);
    case "settings": return showSettings(event);
    case "rewound": {
      const applied = event.report.applied || {};
      const plan = event.report.plan || { restore: [], remove: [] };
      const what = [applied.files ? `files (${plan.restore.length} put back, ${plan.remove.length} removed)` : null,
        applied.conversation ? "the conversation" : null].filter(Boolean).join(" and ");
      say("notice", applied.undo ? `The last rewind was undone: ${what}.`
        : `Rewound ${what} to the start of turn ${applied.toTurn}. What follows starts from there.`);
      return;
    }
    case "turn_end": return;
    case "error": return say("error", event.message);
    case "ask":
      state.asks.set(event.id, event);
      if (!$("ask").open) ask(event);
      return;
    case "answered": {
      state.asks.delete(event.id);
      const dialog = $("ask");
      if (dialog.dataset.ask === String(event.id) && dialog.open) dialog.close();
      nextQuestion();
      return;
    }
    case "closed":
      say("notice", "This session's run has ended here; open it again from the sidebar.");
      $("send").disabled = true;
      $("rewind").disabled = true;
      $("close").disabled = true;
      if (state.source) state.source.close();
      return;
    // Too far behind: start again from the backlog.
    case "reload": follow(state.id, state.cwd); return;
    default: return;
  }
}

function showRecord(record, event) {
  const data = record.data || {};
  if (event.agent) return showChild(event.agent, record, event);
  if (record.type === "user/message") {
    const text = blocksText(data.message, "text");
    const images = event.images || [];
    if (text || images.length) {
      const node = say("user", text);
      if (images.length) node.append(el("div", { class: "images" }, ...images.map(thumbnail)));
    }
  } else if (record.type === "assistant/message") {
    for (const kind of ["text", "reasoning"]) {
      if (state.live[kind]) { state.live[kind].remove(); state.live[kind] = null; }
    }
    const reasoning = blocksText(data.message, "reasoning");
    if (reasoning) say("reasoning", reasoning);
    const text = blocksText(data.message, "text");
    if (event.html) {
      // Rendered on the server, which lets no raw HTML or script link through.
      const node = el("div", { class: "message assistant markdown" });
      node.innerHTML = event.html;
      $("transcript").append(node);
      node.scrollIntoView({ block: "end" });
    } else if (text) say("assistant", text);
  } else if (record.type === "tool/call") {
    $("transcript").append(callNode(null, data, event.view));
  } else if (record.type === "tool/result") {
    const block = (data.message?.content || []).find((b) => b.type === "tool-result");
    if (block && !showResult(null, block)) say(block.isError ? "error" : "notice", resultText(block));
  } else if (record.type === "turn/end") {
    state.live = { text: null, reasoning: null };
  } else if (record.type === "step/end") {
    const usage = data.usage || {};
    state.usage.tokens += usage.totalTokens || 0;
    if (typeof usage.costUsd === "number") { state.usage.cost += usage.costUsd; state.usage.priced = true; }
    $("usage").textContent = `${state.usage.tokens.toLocaleString()} tokens` +
      (state.usage.priced ? ` · $${state.usage.cost.toFixed(4)}` : "");
  } else if (record.type === "session/seed") {
    // A fork's copied history.
    for (const message of data.messages || []) {
      const text = blocksText(message, "text");
      if (text) say(message.role === "user" ? "user" : "assistant", text);
    }
  } else if (record.type === "permission/mode") {
    // The mode changed within the session (a plan approved, a switch): the picker follows.
    if ([...$("mode").options].some((o) => o.value === data.mode)) $("mode").value = data.mode;
  } else if (record.type === "subagent/run") {
    // How a subagent ended, as the session records it (also for one run before a reload).
    const agent = agentPanel(data.agentId);
    agent.label = data.label || agent.label;
    agent.session = data.sessionId;
    agent.tokens = data.usage?.totalTokens || agent.tokens;
    agent.status = endedAs(data.reason);
    agent.background = data.background;
    drawAgent(agent);
  } else if (record.type === "todo/write") {
    $("todos").replaceChildren(...(data.todos || []).map((todo) =>
      el("li", { class: `todo ${todo.status}` }, todo.content || todo.text || "")));
  }
}

// A call as the transcript shows it: its title, its diff, plan or arguments, its live output
// and its result. A subagent's calls are kept apart by its id (ids are only unique per agent).
const callKey = (agent, id) => (agent ? `${agent}\u0000${id}` : id);

function callNode(agent, data, view = {}) {
  const id = data.callId || data.call_id;
  const output = el("pre", { class: "output" });
  const result = el("pre", { class: "result" });
  let shown = view.diff ? diffView(view.path, view.diff) : null;
  if (view.html) {
    // A plan (or another document the call carries), rendered on the server.
    shown = el("div", { class: "message markdown document" });
    shown.innerHTML = view.html;
  }
  const node = el("details", { class: "call", "data-call": id, ...(shown ? { open: "" } : {}) },
    el("summary", {}, view.title || `${data.name} ${shortArgs(data.arguments)}`),
    shown || el("pre", { class: "arguments" }, prettyArgs(data.arguments)), output, result);
  state.calls.set(callKey(agent, id), { node, output, result });
  return node;
}

const resultText = (block) => (block.content || []).map((part) => part.text || `[${part.type}]`).join("\n");

// A result into its call; false when the call is not shown.
function showResult(agent, block) {
  const call = state.calls.get(callKey(agent, block.toolCallId));
  if (!call) return false;
  call.output.textContent = "";
  call.result.textContent = resultText(block);
  if (block.isError) call.node.classList.add("failed");
  return true;
}

// How a turn ended, in a word or two.
function endedAs(reason) {
  const kind = reason?.kind || "ended";
  if (kind === "aborted") return "stopped";
  if (kind === "error") return `failed: ${reason.error?.message || reason.error?.code || "error"}`;
  return kind.replace(/-/g, " ");
}

// Subagents: a panel each, under the todo list, with its status, what it billed and, folded,
// its own transcript (its task, answers and calls) as it works.
function agentPanel(id) {
  let agent = state.agents.get(id);
  if (agent) return agent;
  const summary = el("summary", {});
  const body = el("div", { class: "agent-body" });
  const node = el("details", { class: "agent", "data-agent": id }, summary, body);
  agent = { id, node, summary, body, label: "", task: "", status: "starting", tokens: 0, calls: 0 };
  state.agents.set(id, agent);
  $("agents").append(node);
  drawAgent(agent);
  return agent;
}

function drawAgent(agent) {
  const what = agent.label || agent.task || "";
  const parts = [agent.id, what, agent.status, `${agent.calls} call${agent.calls === 1 ? "" : "s"}`,
    agent.tokens ? `${agent.tokens.toLocaleString()} tokens` : null,
    agent.background ? "background" : null].filter(Boolean);
  agent.summary.textContent = parts.join(" · ");
  agent.node.dataset.status = agent.status;
  agent.node.title = agent.session ? `its session: dsh sessions show ${agent.session}` : "";
}

function showChild(id, record, event) {
  const data = record.data || {};
  const agent = agentPanel(id);
  const add = (node) => agent.body.append(node);
  if (record.type === "turn/start") {
    agent.status = "working";
  } else if (record.type === "user/message") {
    const text = blocksText(data.message, "text");
    if (!agent.task) agent.task = text.split("\n")[0].slice(0, 80);
    if (text) add(el("div", { class: "message user" }, text));
  } else if (record.type === "assistant/message") {
    if (event.html) {
      const node = el("div", { class: "message assistant markdown" });
      node.innerHTML = event.html;
      add(node);
    } else {
      const text = blocksText(data.message, "text");
      if (text) add(el("div", { class: "message assistant" }, text));
    }
  } else if (record.type === "tool/call") {
    agent.calls += 1;
    add(callNode(id, data, event.view));
  } else if (record.type === "tool/result") {
    const block = (data.message?.content || []).find((b) => b.type === "tool-result");
    if (block) showResult(id, block);
  } else if (record.type === "step/end") {
    agent.tokens += data.usage?.totalTokens || 0;
  } else if (record.type === "turn/end") {
    agent.status = endedAs(data.reason);
  }
  drawAgent(agent);
}

// The next question waiting, once the dialog is free.
function nextQuestion() {
  const [first] = state.asks.values();
  if (first && !$("ask").open) ask(first);
}

// An edit's or a write's change: its file, then each line with its sign.
function diffView(path, diff) {
  const lines = diff.lines.map(([sign, text]) =>
    el("span", { class: sign === "+" ? "add" : sign === "-" ? "del" : "ctx" }, `${sign} ${text}\n`));
  if (diff.more) lines.push(el("span", { class: "ctx" }, `… ${diff.more} more lines\n`));
  return el("div", { class: "diff" }, el("div", { class: "path" }, path), el("pre", {}, ...lines));
}

function blocksText(message, type) {
  return (message?.content || []).filter((b) => b.type === type).map((b) => b.text).join("\n");
}

function prettyArgs(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

function shortArgs(text) {
  const flat = String(text || "").replace(/\s+/g, " ");
  return flat.length > 80 ? `${flat.slice(0, 80)}…` : flat;
}

// A question from the session: an approval, the model's questions, or a server's form.
function ask(event) {
  const dialog = $("ask");
  dialog.dataset.ask = String(event.id);
  const answer = (value) => {
    api("POST", `/api/sessions/${encodeURIComponent(state.id)}/answer`, { id: event.id, answer: value })
      .catch((error) => say("error", error.message));
    dialog.close();
  };
  const content = [];
  if (event.ask === "approval") {
    const reason = el("input", { type: "text", placeholder: "Why not (the model reads it)", "aria-label": "Reason" });
    // What runs if allowed: the call itself, not only what the model says of it.
    const call = event.call || {};
    const shown = call.diff ? diffView(call.path, call.diff)
      : el("pre", { class: "arguments" }, prettyArgs(call.arguments || ""));
    content.push(el("h2", {}, `${event.tool} asks for permission`),
      el("p", { class: "call-title" }, call.title || event.tool), shown,
      el("p", {}, "The model says: "), el("pre", {}, event.reason),
      el("div", { class: "choices" },
        el("button", { type: "button", onclick: () => answer({ outcome: "once" }) }, "Allow once"),
        event.grant ? el("button", { type: "button", onclick: () => answer({ outcome: "session" }) },
          `Allow for this session (${event.grant})`) : null,
        reason,
        el("button", { type: "button", onclick: () => answer({ outcome: "deny", reason: reason.value }) }, "Deny")));
  } else if (event.ask === "questions") {
    const fields = event.questions.map((question) => {
      const inputs = question.options.map((option) =>
        el("label", {}, el("input", { type: question.multiSelect ? "checkbox" : "radio", name: question.id, value: option.label }),
          ` ${option.label}`, option.description ? el("small", {}, ` — ${option.description}`) : null));
      const custom = el("input", { type: "text", placeholder: "Or your own answer", "aria-label": "Your own answer" });
      return { question, custom, node: el("fieldset", {}, el("legend", {}, question.question), ...inputs.map((i) => el("div", {}, i)), custom) };
    });
    content.push(el("h2", {}, "The model asks"), ...fields.map((f) => f.node),
      el("div", { class: "choices" },
        el("button", { type: "button", onclick: () => answer({ answers: fields.map(({ question, custom, node }) => ({
          id: question.id,
          selected: [...node.querySelectorAll("input:checked")].map((i) => i.value),
          custom: custom.value,
        })) }) }, "Answer"),
        el("button", { type: "button", onclick: () => answer({}) }, "Cancel")));
  } else if (event.ask === "form") {
    const properties = event.schema?.properties || {};
    const inputs = Object.entries(properties).map(([name, property]) => {
      let input;
      const options = property.enum || (property.oneOf || []).map((o) => o.const);
      if (options.length) {
        input = el("select", { name }, ...options.map((o) => el("option", { value: o }, o)));
        if (property.default !== undefined) input.value = property.default;
      } else if (property.type === "boolean") {
        input = el("input", { type: "checkbox", name });
        input.checked = property.default === true;
      } else {
        input = el("input", { type: property.type === "string" ? "text" : "number", name });
        if (property.default !== undefined) input.value = property.default;
      }
      return { name, property, input, node: el("label", {}, `${property.title || name} `, input) };
    });
    const read = () => Object.fromEntries(inputs.map(({ name, property, input }) => {
      if (property.type === "boolean") return [name, input.checked];
      if (property.type === "integer") return [name, parseInt(input.value, 10)];
      if (property.type === "number") return [name, Number(input.value)];
      return [name, input.value];
    }));
    content.push(el("h2", {}, `MCP server "${event.server}" asks`), el("p", {}, event.message),
      ...inputs.map((i) => el("div", {}, i.node)),
      el("div", { class: "choices" },
        el("button", { type: "button", onclick: () => answer({ action: "accept", content: read() }) }, "Submit"),
        el("button", { type: "button", onclick: () => answer({ action: "decline" }) }, "Decline")));
  }
  dialog.replaceChildren(...content);
  if (!dialog.open) dialog.showModal();
}
// Esc does not throw a question away: it is answered, or withdrawn by the session.
$("ask").addEventListener("cancel", (event) => event.preventDefault());

// Images: attached in the composer (the button, a paste or a drop), stored by the server at
// once (normalised as every image a model sees), sent with the next message, and shown from
// the session's own copies.
// Read with the token in a header and shown from a blob: the token is never in an image's
// address, where history and "open image in new tab" would keep it.
function thumbnail(image) {
  const node = el("img", { class: "thumbnail", alt: `image ${image.width}×${image.height}`,
    title: `${image.mediaType}, ${image.width}×${image.height}` });
  fetch(`/api/sessions/${encodeURIComponent(state.id)}/images/${image.attachmentId}`,
    { headers: { Authorization: `Bearer ${TOKEN}` } })
    .then((response) => (response.ok ? response.blob() : Promise.reject(new Error(`HTTP ${response.status}`))))
    .then((blob) => { node.src = URL.createObjectURL(blob); })
    .catch((error) => { node.alt = `image ${image.width}×${image.height} (cannot be shown: ${error.message})`; });
  return node;
}

async function attachImages(files) {
  for (const file of files) {
    if (!file.type.startsWith("image/")) { say("error", `${file.name} is not an image`); continue; }
    try {
      const image = await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/images`, file);
      state.attached.push(image);
    } catch (error) { say("error", `${file.name || "the image"}: ${error.message}`); }
  }
  drawAttached();
}

function drawAttached() {
  $("attached").replaceChildren(...state.attached.map((image, i) => el("span", { class: "attached" },
    thumbnail(image),
    el("button", { type: "button", title: "Remove", "aria-label": "Remove the image",
      onclick: () => { state.attached.splice(i, 1); drawAttached(); } }, "×"))));
}

$("attach").addEventListener("click", () => $("image-file").click());
$("image-file").addEventListener("change", async (event) => {
  await attachImages([...event.target.files]);
  event.target.value = "";
});
$("prompt").addEventListener("paste", (event) => {
  const files = [...(event.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
  if (!files.length || !state.imageInput) return;
  event.preventDefault();
  attachImages(files);
});
$("composer").addEventListener("dragover", (event) => { if (state.imageInput) event.preventDefault(); });
$("composer").addEventListener("drop", (event) => {
  if (!state.imageInput || !event.dataTransfer?.files?.length) return;
  event.preventDefault();
  attachImages([...event.dataTransfer.files]);
});

// The composer's history: what you sent, newest last, kept in this browser.
const sent = JSON.parse(localStorage.getItem("dsh-sent") || "[]");
let recalled = sent.length;

// The terminal UI's commands, where they mean something here.
const SLASH = {
  "/help": ["the commands and your saved prompts", () => listPrompts(true)],
  "/new": ["start a new session", () => $("new-session").click()],
  "/model": ["switch the model: /model NAME", (arg) => arg ? changeSettings({ model: arg }) : say("notice", `The model is ${$("model").value}.`)],
  "/permissions": ["switch the permission mode: /permissions MODE", (arg) => arg ? changeSettings({ permissionMode: arg }) : say("notice", `The permission mode is ${$("mode").value}.`)],
  "/plan": ["plan mode", () => changeSettings({ permissionMode: "plan" })],
  "/compact": ["summarise the older part of the conversation now", () =>
    api("POST", `/api/sessions/${encodeURIComponent(state.id)}/compact`, {}).catch((error) => say("error", error.message))],
  "/rewind": ["take the files or the conversation back to a turn", () => rewindDialog()],
  "/diff": ["the workspace's uncommitted changes (git diff)", () => showDiff()],
  "/rename": ["give this session a title, which the list shows: /rename TITLE (alone: none)",
    (arg) => renameSession(state.cwd, { id: state.id }, arg)],
  "/skills": ["the skills the model can load", () => say("notice", state.skills.length
    ? `Skills:\n${state.skills.map((s) => `  ${s.name}  ${s.description}`).join("\n")}`
    : "No skills found (see docs/config.md, skills).")],
  "/prompts": ["your saved prompts: /NAME sends one", () => listPrompts(false)],
  "/status": ["session, model, mode, tokens", () => say("notice",
    `${state.id} in ${state.cwd}\nmodel ${$("model").value} · ${$("mode").value} · ${$("usage").textContent || "no tokens yet"}`)],
};

// The saved prompts (`NAME.md` in the workspace's .dsh/prompts/ or dsh's home's prompts/),
// read again each time, so one saved meanwhile is listed; with the commands for `/help`.
async function listPrompts(withCommands) {
  let found;
  try { found = await api("GET", `/api/sessions/${encodeURIComponent(state.id)}/prompts`); }
  catch (error) { say("error", error.message); return; }
  const prompts = found.prompts.map((p) => `  /${p.name}  ${p.path}`);
  const commands = Object.entries(SLASH).map(([c, [what]]) => `  ${c}  ${what}`);
  say("notice", [
    ...(withCommands ? ["Commands:", ...commands] : []),
    prompts.length ? "Saved prompts:" : "No saved prompts: put NAME.md in .dsh/prompts/ or in prompts/ of dsh's home.",
    ...prompts,
  ].join("\n"));
}

// `/diff`: git's view of the uncommitted changes, each line coloured by its sign.
async function showDiff() {
  let found;
  try { found = await api("GET", `/api/sessions/${encodeURIComponent(state.id)}/diff`); }
  catch (error) { say("error", error.message); return; }
  if (!found.diff.trim()) { say("notice", "No uncommitted changes."); return; }
  const lines = found.diff.split("\n").slice(0, 2000).map((line) => {
    const kind = /^(\+\+\+|---|diff )/.test(line) ? "ctx" : line.startsWith("+") ? "add"
      : line.startsWith("-") ? "del" : "ctx";
    return el("span", { class: kind }, `${line}\n`);
  });
  const node = el("div", { class: "diff message" }, el("pre", {}, ...lines));
  $("transcript").append(node);
  node.scrollIntoView({ block: "end" });
}

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("prompt").value;
  if (!state.id || (!text.trim() && !state.attached.length)) return;
  sent.push(text);
  if (sent.length > 200) sent.shift();
  localStorage.setItem("dsh-sent", JSON.stringify(sent));
  recalled = sent.length;
  const [command, ...rest] = text.trim().split(/\s+/);
  if (command.startsWith("/") && !command.includes("/", 1)) {
    $("prompt").value = "";
    const known = SLASH[command];
    if (known) { known[1](rest.join(" ")); return; }
    // Any other name is a saved prompt's, if the workspace or dsh's home has one.
    const args = text.trim().slice(command.length).trim();
    try {
      await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/prompt`,
        { saved: command.slice(1), arguments: args });
    } catch (error) { $("prompt").value = text; say("error", error.message); }
    return;
  }
  try {
    const images = state.attached.map((image) => image.attachmentId);
    await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/prompt`, { text, images });
    $("prompt").value = "";
    state.attached = [];
    drawAttached();
  } catch (error) {
    say("error", error.message);
  }
});
// `@` mentions: the word being typed after an `@`, completed from the workspace's files (the
// index the terminal UI uses); Tab takes the first, a click any.
function mentionAtCaret() {
  const prompt = $("prompt");
  const before = prompt.value.slice(0, prompt.selectionStart);
  const found = before.match(/(^|\s)@([^\s@]*)$/);
  return found ? { start: before.length - found[2].length - 1, word: found[2] } : null;
}

function completeMention(path) {
  const prompt = $("prompt");
  const mention = mentionAtCaret();
  if (!mention) return;
  const after = prompt.value.slice(prompt.selectionStart);
  prompt.value = `${prompt.value.slice(0, mention.start)}@${path} ${after}`;
  const caret = mention.start + path.length + 2;
  prompt.setSelectionRange(caret, caret);
  $("mentions").replaceChildren();
  prompt.focus();
}

let mentionAsked = 0;
$("prompt").addEventListener("input", async () => {
  const mention = mentionAtCaret();
  if (!mention || !state.id) { $("mentions").replaceChildren(); return; }
  const asked = ++mentionAsked;
  try {
    const found = await api("GET", `/api/sessions/${encodeURIComponent(state.id)}/files?q=${encodeURIComponent(mention.word)}`);
    if (asked !== mentionAsked) return;
    $("mentions").replaceChildren(...found.matches.map((path) =>
      el("button", { type: "button", role: "option", onclick: () => completeMention(path) }, path)));
  } catch (error) { $("mentions").replaceChildren(); }
});

$("prompt").addEventListener("keydown", (event) => {
  const prompt = $("prompt");
  if (event.isComposing) return;
  const first = $("mentions").querySelector("button");
  if (event.key === "Tab" && first && mentionAtCaret()) {
    event.preventDefault();
    completeMention(first.textContent);
    return;
  }
  if (event.key === "Escape") $("mentions").replaceChildren();
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("composer").requestSubmit(); return; }
  // ↑ on the first line recalls what was sent before; ↓ on the last goes forward again.
  const before = prompt.value.slice(0, prompt.selectionStart);
  const after = prompt.value.slice(prompt.selectionEnd);
  if (event.key === "ArrowUp" && !before.includes("\n") && recalled > 0) {
    event.preventDefault();
    prompt.value = sent[--recalled];
  } else if (event.key === "ArrowDown" && !after.includes("\n") && recalled < sent.length) {
    event.preventDefault();
    recalled += 1;
    prompt.value = recalled < sent.length ? sent[recalled] : "";
  }
});
// Rewind: the turns with what each changed, then the plan, then doing it.
async function rewindDialog() {
  const dialog = $("rewind-dialog");
  let turns;
  try { turns = await api("GET", `/api/sessions/${encodeURIComponent(state.id)}/turns`); }
  catch (error) { say("error", error.message); return; }
  const pick = (turn, files, conversation) => rewindPlan({ toTurn: turn, files, conversation });
  const rows = turns.map((turn) => el("li", {},
    `Turn ${turn.turn}: ${turn.task || "(no task)"} — ${turn.changes.length} files changed `,
    el("button", { type: "button", disabled: turn.restorable ? null : "", onclick: () => pick(turn.turn, true, true) }, "Files and conversation"),
    el("button", { type: "button", disabled: turn.restorable ? null : "", onclick: () => pick(turn.turn, true, false) }, "Files"),
    el("button", { type: "button", onclick: () => pick(turn.turn, false, true) }, "Conversation")));
  dialog.replaceChildren(el("h2", {}, "Rewind to the start of a turn"), el("ul", { class: "turns" }, ...rows),
    el("div", { class: "choices" },
      el("button", { type: "button", onclick: () => rewindPlan({ undo: true, files: true, conversation: true }) }, "Undo the last rewind"),
      el("button", { type: "button", onclick: () => dialog.close() }, "Cancel")));
  if (!dialog.open) dialog.showModal();
}

async function rewindPlan(request) {
  const dialog = $("rewind-dialog");
  let report;
  try { report = await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/rewind`, { ...request, apply: false }); }
  catch (error) { dialog.close(); say("error", error.message); return; }
  const list = (title, items) => items.length ? [el("h3", {}, title), el("pre", {}, items.join("\n"))] : [];
  const outside = (report.changedOutside || []).map((c) => c.path);
  dialog.replaceChildren(el("h2", {}, request.undo ? "Undo the last rewind" : `Rewind to the start of turn ${request.toTurn}`),
    ...list("Put back", report.plan.restore), ...list("Removed", report.plan.remove),
    ...list("Changed outside dsh since (kept in the snapshot taken first, so an undo brings them back)", outside),
    ...(report.plan.restore.length + report.plan.remove.length === 0 && request.files ? [el("p", {}, "No file changes.")] : []),
    el("div", { class: "choices" },
      el("button", { type: "button", onclick: async () => {
        try {
          await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/rewind`, { ...request, apply: true, acceptedOutside: outside });
          dialog.close();
        } catch (error) { dialog.close(); say("error", error.message); }
      } }, "Rewind"),
      el("button", { type: "button", onclick: () => dialog.close() }, "Cancel")));
}

$("rewind").addEventListener("click", () => rewindDialog());
$("close").addEventListener("click", () =>
  api("POST", `/api/sessions/${encodeURIComponent(state.id)}/close`, {}).catch((error) => say("error", error.message)));
$("stop").addEventListener("click", () =>
  api("POST", `/api/sessions/${encodeURIComponent(state.id)}/stop`, {}).catch((error) => say("error", error.message)));
$("new-session").addEventListener("click", async () => {
  const cwd = window.prompt("Workspace folder", state.cwd || state.defaultCwd || "");
  if (cwd) openSession(cwd).catch((error) => say("error", error.message));
});
$("search").addEventListener("input", () => renderSessions());
$("mode").addEventListener("change", () => changeSettings({ permissionMode: $("mode").value }));
$("model").addEventListener("change", () => changeSettings({ model: $("model").value }));

// A first run with no API key anywhere: the page asks for one, as `dsh login` does. The key is
// checked with the provider before it is saved; a refused key is said so in the dialog.
async function askForKey() {
  let wanted;
  try { wanted = await api("GET", "/api/key"); } catch { return; }
  if (!wanted.needed || wanted.found) return;
  const dialog = $("key-dialog");
  const input = el("input", { type: "password", id: "api-key", autocomplete: "off",
    "aria-label": `API key for ${wanted.provider}` });
  const problem = el("p", { class: "problem", role: "alert" });
  const save = el("button", { type: "submit" }, "Check and save");
  const form = el("form", { method: "dialog" },
    el("h2", {}, `An API key for ${wanted.provider}`),
    el("p", {}, `dsh has no key for ${wanted.provider} yet (${wanted.variable} is not set). ` +
      `Paste one: it is checked with the provider at ${wanted.baseUrl} first (nothing is ` +
      "billed), then saved on this machine readable by you alone, for every run. `dsh logout` " +
      "removes it."),
    el("label", {}, "API key ", input), problem, el("div", { class: "buttons" }, save));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save.disabled = true;
    problem.textContent = "Checking…";
    try {
      await api("POST", "/api/key", { key: input.value });
      input.value = "";
      dialog.close();
      say("notice", `The key was accepted by ${wanted.provider} and saved.`);
    } catch (error) {
      problem.textContent = error.message;
      input.select();
    } finally { save.disabled = false; }
  });
  dialog.replaceChildren(form);
  dialog.showModal();
  input.focus();
}

// A reload (or a second tab) comes back to the session it showed, running turn and all.
askForKey();
loadSessions().then(() => {
  const kept = JSON.parse(sessionStorage.getItem("dsh-session") || "null");
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (kept && (!wanted || kept.id === wanted)) openSession(kept.cwd, kept.id).catch((error) => say("error", error.message));
  else if (wanted) {
    const link = document.querySelector(`[data-session="${CSS.escape(wanted)}"]`);
    if (link) link.click();
  }
}).catch((error) => say("error", error.message));

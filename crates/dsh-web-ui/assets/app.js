// dsh web: the page. It lists the sessions on disk, opens one, shows what the session
// reports (the view of each record of its log, and the answer as it streams) and sends
// prompts, stops and answers. Text from the session is always inserted as text, never as HTML.
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
// `draft` is the folder of a session not started yet: the first message starts it, so that
// no click leaves an empty session behind.
const state = { id: null, cwd: null, source: null, busy: false, calls: new Map(),
  live: { text: null, reasoning: null }, asks: new Map(), listing: null, draft: null,
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
  drawHeading();
  if (state.draft) drawWelcome();
}

// The session's listing entry, once the list has it.
const listed = (id) => (state.listing?.workspaces || []).flatMap((w) => w.sessions).find((s) => s.id === id);

// The session bar's heading: the session's title (or first task) and its folder.
function drawHeading() {
  const session = state.id && listed(state.id);
  $("session-title").textContent = (session && sessionName(session)) || "New session";
  $("session-title").dataset.session = state.id || "";
  $("session-where").textContent = state.id ? state.cwd : state.draft?.cwd || "";
  document.title = session && sessionName(session) ? `${sessionName(session)} · dsh` : "dsh";
}

// A control in the list, named so that it can be found again once the list is drawn anew: the
// entry's session and the button's label (none for the entry's link).
function sessionControlOf(node) {
  const session = node?.closest?.(".session")?.querySelector("a")?.dataset.session;
  return session ? { session, label: node.getAttribute("aria-label") } : null;
}

function findSessionControl(control) {
  const link = control && [...$("sessions").querySelectorAll("a")].find((a) => a.dataset.session === control.session);
  if (!link || !control.label) return link || null;
  return link.parentElement.querySelector(`button[aria-label="${control.label}"]`);
}

// An entry's buttons show only while it has the focus: shown for the focus to land.
function focusInList(target) {
  const row = target.closest(".session");
  row?.classList.add("asking");
  target.focus();
  row?.classList.remove("asking");
}

// The sidebar from the listing fetched last. The search box filters it here by title and folder
// as keys are typed, and by what the server's search found (archive.js) once typing pauses.
function renderSessions() {
  const listing = state.listing || { workspaces: [] };
  const query = $("search").value.trim().toLowerCase();
  const nav = $("sessions");
  // A turn ending or a title arriving draws the list again; a keyboard user's focus on an
  // entry or one of its buttons must not fall to the page's body meanwhile.
  const focused = nav.contains(document.activeElement) ? sessionControlOf(document.activeElement) : null;
  nav.replaceChildren();
  for (const workspace of listing.workspaces) {
    const sessions = workspace.sessions.filter((s) => !query || foundOf(s) ||
      sessionName(s).toLowerCase().includes(query) || workspace.cwd.toLowerCase().includes(query));
    if (!sessions.length) continue;
    nav.append(el("h2", { title: workspace.cwd }, folderName(workspace.cwd),
      el("small", {}, workspace.cwd)));
    for (const session of sessions) {
      const link = el("a", {
        href: `#session=${encodeURIComponent(session.id)}`,
        class: session.id === state.id ? "open" : "",
        "aria-current": session.id === state.id ? "page" : null,
        "data-session": session.id,
        onclick: (event) => { event.preventDefault(); openSession(workspace.cwd, session.id); },
      }, el("span", { class: "name" }, sessionName(session) || "(no task yet)"),
        el("small", {}, sessionMeta(session)), snippetOf(foundOf(session)));
      // Small, at the entry's edge: a click on the entry itself opens it.
      const tool = (label, glyph, title, act) => el("button", { type: "button", title, "aria-label": label,
        onclick: act }, el("span", { "aria-hidden": "true" }, glyph), el("span", { class: "label" }, label));
      const tools = el("span", { class: "session-tools" },
        tool("Fork", "⎇", "Fork: a new session from a copy of this one", () => forkSession(workspace.cwd, session.id)),
        tool("Rename", "✎", "Rename: the title this list shows", () => renameDialog(workspace.cwd, session)),
        tool("Delete", "✕", "Delete this session", () => deleteDialog(workspace.cwd, session)));
      nav.append(el("div", { class: "session" }, link, tools));
    }
  }
  if (focused) focusInList(findSessionControl(focused) || $("search"));
}

// Where the search found a session's words: the turn and the words around them.
const snippetOf = (hit) => hit && el("small", { class: "snippet" }, `turn ${hit.turn}: ${hit.snippet}`);

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
const folderName = (path) => path.split("/").filter(Boolean).pop() || path;
const turns = (n) => `${n} turn${n === 1 ? "" : "s"}`;

// When a session was started, as a person says it, and how long it is.
function sessionMeta(session) {
  const when = new Date(session.createdAt);
  const today = new Date().toDateString() === when.toDateString();
  const date = today ? when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : when.toLocaleDateString([], { month: "short", day: "numeric", year: "numeric" });
  return `${date} · ${turns(session.turns)}`;
}

// Gives the session `title` ("" takes its title away); what the server refuses is thrown.
async function retitle(cwd, session, title) {
  await api("POST", `/api/sessions/${encodeURIComponent(session.id)}/rename`, { cwd, title });
  if (session.id === state.id) {
    say("notice", title.trim() ? `The session is titled "${title.trim()}".` : "The session's title is taken away.");
  }
  await loadSessions();
}

// `/rename TITLE` in the composer; the sidebar's Rename asks in a dialog (dialogs.js).
async function renameSession(cwd, session, given) {
  try { await retitle(cwd, session, given); } catch (error) { say("error", error.message); }
}

// Deletes the session, once the dialog (dialogs.js) has asked; what the server refuses is thrown.
async function removeSession(cwd, session) {
  await api("POST", `/api/sessions/${encodeURIComponent(session.id)}/delete`, { cwd });
  await loadSessions();
}

// Reads the session's reports: everything so far, then each as it comes.
function follow(id, cwd) {
  if (state.source) state.source.close();
  Object.assign(state, { id, cwd, calls: new Map(), live: { text: null, reasoning: null },
    busy: false, asks: new Map(), usage: { tokens: 0, cost: 0, priced: false }, agents: new Map(),
    attached: [], contextUsed: 0 });
  drawAttached();
  $("ask").close();
  $("todos").replaceChildren();
  $("agents").replaceChildren();
  $("usage").textContent = "";
  $("context").textContent = "";
  $("goal").textContent = "";
  sessionStorage.setItem("dsh-session", JSON.stringify({ id, cwd }));
  history.replaceState(null, "", `#session=${encodeURIComponent(id)}`);
  state.draft = null;
  $("transcript").replaceChildren();
  drawHeading();
  openDrawer(false);
  setBusy(false);
  $("send").disabled = false;
  $("rewind").disabled = false;
  $("rewind").hidden = $("close").hidden = false;
  const source = new EventSource(`/api/sessions/${encodeURIComponent(id)}/events?token=${encodeURIComponent(TOKEN)}`);
  source.onmessage = (message) => show(JSON.parse(message.data));
  state.caughtUp = false;
  source.onerror = () => {
    state.caughtUp = false;
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
  choices($("mode"), event.modes || [], event.mode);
  choices($("model"), state.listing?.defaults?.models || [], event.model);
  state.contextWindow = event.contextWindow || 0;
  drawContext();
}

// How much of the model's context window the conversation fills: what the last request sent
// and got back (a compaction's summary, once it replaced the older part).
function drawContext(used = state.contextUsed) {
  state.contextUsed = used;
  const node = $("context");
  if (!used || !state.contextWindow) { node.textContent = ""; return; }
  const share = Math.min(1, used / state.contextWindow);
  const left = Math.max(0, Math.round((1 - share) * 100));
  node.textContent = `${left}% context left`;
  node.title = `${used.toLocaleString()} of the model's ${state.contextWindow.toLocaleString()} tokens of context in use`;
  node.dataset.low = String(left < 20);
}

// A picker's options, with `value` chosen (and listed, if it is not among them).
function choices(select, values, value) {
  const all = values.includes(value) ? values : [...values, value];
  select.replaceChildren(...all.map((v) => el("option", { value: v }, v)));
  select.value = value;
}

// Before the session starts, the choices are kept for it; after, each reopens it so.
async function changeSettings(change) {
  if (state.draft) {
    const mode = change.permissionMode;
    if (mode && ![...$("mode").options].some((option) => option.value === mode)) {
      say("error", `permissionMode must be one of ${[...$("mode").options].map((o) => o.value).join(", ")}, got "${mode}"`);
      return;
    }
    if (mode) state.draft.mode = $("mode").value = mode;
    if (change.model) choices($("model"), state.listing?.defaults?.models || [], state.draft.model = change.model);
    return;
  }
  try {
    await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/settings`, change);
  } catch (error) {
    say("error", error.message);
  }
}

function setBusy(busy) {
  // A turn has ended: the list's entry for the session has its task and turns now.
  if (state.busy && !busy) {
    loadSessions().catch(() => {});
    notify("dsh finished the turn", state.lastAnswer || "");
  }
  state.busy = busy;
  $("mode").disabled = busy;
  $("rewind").disabled = busy || !state.id;
  $("close").disabled = !state.id;
  $("model").disabled = busy;
  $("stop").disabled = !busy;
  $("session-state").textContent = busy ? "working…" : "";
}

// The conversation follows its end, scrolled once a frame however many reports came in it:
// a backlog of a thousand records is laid out once, not once a record.
let scrollWanted = false;
function scrollToEnd() {
  if (scrollWanted) return;
  scrollWanted = true;
  requestAnimationFrame(() => {
    scrollWanted = false;
    const transcript = $("transcript");
    transcript.scrollTop = transcript.scrollHeight;
  });
}

function say(kind, text) {
  const node = el("div", { class: `message ${kind}` }, text);
  $("transcript").append(node);
  scrollToEnd();
  return node;
}

function show(event) {
  switch (event.kind) {
    case "view": return event.agent ? showChild(event.agent, event.view) : showView(event.view);
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
    // What comes after this happens now: a call's time is taken from it.
    case "live": state.caughtUp = true; return;
    case "error": return say("error", event.message);
    case "ask":
      notifyAsk(event);
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

// A record's view (dsh_protocol::View): a message, an answer, a call, a result, the todo
// list, the mode, a turn's or a step's mark, or a card.
function showView(view) {
  switch (view.view) {
    case "user": {
      const text = blocksText(view.message, "text");
      const images = view.images || [];
      if (text || images.length) {
        const node = say("user", text);
        if (images.length) node.append(el("div", { class: "images" }, ...images.map(thumbnail)));
      }
      return;
    }
    case "answer": {
      for (const kind of ["text", "reasoning"]) {
        if (state.live[kind]) { state.live[kind].remove(); state.live[kind] = null; }
      }
      if (view.usage?.totalTokens) drawContext(view.usage.totalTokens);
      const reasoning = blocksText(view.message, "reasoning");
      if (reasoning) say("reasoning", reasoning);
      const text = blocksText(view.message, "text");
      if (text) state.lastAnswer = text.split("\n")[0].slice(0, 160);
      if (view.html) $("transcript").append(markdownNode("message assistant markdown", view.html));
      else if (text) say("assistant", text);
      scrollToEnd();
      return;
    }
    case "call": $("transcript").append(callNode(null, view, view.described)); return;
    case "result": {
      const block = (view.message?.content || []).find((b) => b.type === "tool-result");
      if (block && !showResult(null, block)) say(block.isError ? "error" : "notice", resultText(block));
      return;
    }
    case "turn_end": state.live = { text: null, reasoning: null }; return;
    case "step_end": return addUsage(view.usage);
    // The mode changed within the session (a plan approved, a switch): the picker follows.
    case "mode":
      if ([...$("mode").options].some((o) => o.value === view.mode)) $("mode").value = view.mode;
      return;
    case "todos":
      $("todos").replaceChildren(...(view.todos || []).map((todo) =>
        el("li", { class: `todo ${todo.status}` }, todo.content || "")));
      return;
    case "card": return showCard(view);
    default: return;
  }
}

// What a request billed, added to the session's tokens and cost in the status area.
// Drawn once a frame, however many steps came in it: a session's backlog of a thousand steps
// formats its numbers once, not once a step.
function addUsage(usage = {}) {
  state.usage.tokens += usage.totalTokens || 0;
  if (typeof usage.costUsd === "number") { state.usage.cost += usage.costUsd; state.usage.priced = true; }
  if (state.usageDrawn === false) return;
  state.usageDrawn = false;
  requestAnimationFrame(drawUsage);
}

function drawUsage() {
  state.usageDrawn = true;
  $("usage").textContent = `${state.usage.tokens.toLocaleString()} tokens` +
    (state.usage.priced ? ` · $${state.usage.cost.toFixed(4)}` : "");
}

// The title the model wrote after the first turn: the sidebar and the heading show it at
// once (a title the user gave, already listed, stays). Its request is outside any step.
function titled(record) {
  addUsage(record.usage);
  const session = listed(state.id);
  if (session && !session.title && record.title) {
    session.title = record.title;
    renderSessions();
    drawHeading();
  }
}

// Rendered on the server, which lets no raw HTML or script link through.
function markdownNode(className, html) {
  const node = el("div", { class: className });
  node.innerHTML = html;
  return node;
}

// A card, drawn alike whatever it is about: its icon and headline in its tone, the file, the
// body, the details. What the page keeps of it beside: a fork's copied history above it, a
// subagent's end in its panel.
function showCard(card) {
  if (card.kind === "fork") {
    for (const message of card.state?.messages || []) {
      const text = blocksText(message, "text");
      if (text) say(message.role === "user" ? "user" : "assistant", text);
    }
  } else if (card.kind === "title") {
    // The heading says it; the conversation needs no word of it.
    return titled(card.state || {});
  } else if (card.kind === "compaction" && card.state?.tokensAfter) {
    drawContext(card.state.tokensAfter);
  } else if (card.kind === "goal" && card.state?.goal) {
    drawGoal(card.state.goal);
  } else if (card.kind === "subagent") {
    const run = card.state || {};
    const agent = agentPanel(run.agentId);
    agent.label = run.label || agent.label;
    agent.session = run.sessionId;
    agent.tokens = run.usage?.totalTokens || agent.tokens;
    agent.status = endedAs(run.reason);
    agent.background = run.background;
    drawAgent(agent);
  }
  const node = el("div", { class: `card ${card.tone}${card.routine ? " routine" : ""}`, "data-kind": card.kind },
    el("div", { class: "headline" }, el("span", { class: "icon", "aria-hidden": "true" }, card.icon), " ", card.headline),
    card.path ? el("div", { class: "path" }, card.path) : null,
    card.html ? markdownNode("markdown", card.html) : null,
    card.note ? el("small", { class: "note" }, card.note) : null);
  $("transcript").append(node);
  scrollToEnd();
}

// The session's goal, in the status line: its objective, where it is, the rounds it took.
function drawGoal(goal) {
  const rounds = goal.roundsStarted ? ` · round ${goal.roundsStarted}/${goal.maxGoalRounds}` : "";
  $("goal").textContent = `${goal.objective} · ${goal.phase}${rounds}`;
  $("goal").dataset.phase = goal.phase;
  $("goal").title = `The session's goal (${goal.phase})`;
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
  const title = view.title || `${data.name} ${shortArgs(data.arguments)}`;
  const meta = el("span", { class: "meta" });
  const mark = el("span", { class: "state", role: "img", "aria-label": "running" }, "◌");
  const node = el("details", { class: "call", "data-call": id, "data-state": "running", ...(shown ? { open: "" } : {}) },
    el("summary", { title }, mark, el("span", { class: "title" }, title), meta),
    shown || argumentsView(data.arguments), output, result);
  state.calls.set(callKey(agent, id), { node, output, result, meta, mark, name: data.name, shown: !!shown,
    started: state.caughtUp ? performance.now() : null });
  return node;
}

// A call's arguments: a command as you would type it (and what else it was given), others as
// indented JSON.
function argumentsView(text) {
  let args;
  try { args = JSON.parse(text); } catch { return el("pre", { class: "arguments" }, text); }
  if (typeof args?.command !== "string") return el("pre", { class: "arguments" }, JSON.stringify(args, null, 2));
  const rest = Object.entries(args).filter(([key]) => key !== "command")
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  return el("pre", { class: "arguments command" }, el("span", { class: "sign", "aria-hidden": "true" }, "$ "),
    args.command, rest.length ? el("span", { class: "rest" }, `\n${rest.join("\n")}`) : null);
}

// How long something took, as a person reads it.
function took(ms) {
  if (ms < 100) return "< 0.1 s";
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

// How a call ended, at a glance: its mark, and a command's exit status (a failing one ends
// with `[exit code: N]`; one that ended well says nothing).
function callEnded(call, block, text) {
  const stopped = block.isError && /tool call aborted/.test(text);
  const code = text.match(/\[exit code: (-?\d+)\]/);
  const ended = stopped ? "stopped" : block.isError || (code && code[1] !== "0") ? "failed" : "done";
  call.node.dataset.state = ended;
  call.mark.textContent = { stopped: "■", failed: "✕", done: "✓" }[ended];
  call.mark.setAttribute("aria-label", ended);
  const shell = call.name === "bash" || call.name === "shell";
  const status = stopped ? "stopped" : code ? `exit ${code[1]}`
    : shell && !block.isError ? "exit 0" : block.isError ? "error" : "";
  // Timed only when both ends were seen as they happened (not read from the backlog).
  const time = call.started !== null && state.caughtUp ? took(performance.now() - call.started) : "";
  call.meta.textContent = [status, time].filter(Boolean).join(" · ");
  // A change or a plan shown says what the call did; its result only repeats it.
  call.result.hidden = call.shown && !block.isError;
}

const resultText = (block) => (block.content || []).map((part) => part.text || `[${part.type}]`).join("\n");

// A result into its call; false when the call is not shown.
function showResult(agent, block) {
  const call = state.calls.get(callKey(agent, block.toolCallId));
  if (!call) return false;
  // A result has the output in it; a call stopped or failed has not, and what was watched of
  // it stays above its error.
  if (!block.isError) call.output.textContent = "";
  call.result.textContent = resultText(block);
  if (block.isError) call.node.classList.add("failed");
  callEnded(call, block, call.result.textContent);
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

// A subagent's view, in its panel: its task, answers and calls as it works.
function showChild(id, view) {
  const agent = agentPanel(id);
  const add = (node) => agent.body.append(node);
  if (view.view === "turn_start") {
    agent.status = "working";
  } else if (view.view === "user") {
    const text = blocksText(view.message, "text");
    if (!agent.task) agent.task = text.split("\n")[0].slice(0, 80);
    if (text) add(el("div", { class: "message user" }, text));
  } else if (view.view === "answer") {
    const text = blocksText(view.message, "text");
    if (view.html) add(markdownNode("message assistant markdown", view.html));
    else if (text) add(el("div", { class: "message assistant" }, text));
  } else if (view.view === "call") {
    agent.calls += 1;
    add(callNode(id, view, view.described));
  } else if (view.view === "result") {
    const block = (view.message?.content || []).find((b) => b.type === "tool-result");
    if (block) showResult(id, block);
  } else if (view.view === "step_end") {
    agent.tokens += view.usage?.totalTokens || 0;
  } else if (view.view === "turn_end") {
    agent.status = endedAs(view.reason);
  } else if (view.view === "card") {
    add(el("div", { class: `card ${view.tone}` }, `${view.icon} ${view.headline}`));
  }
  drawAgent(agent);
}

// An edit's or a write's change: its file, then each line with its sign and, where the
// server found where in the file it starts, its old and new line numbers (left out of a copy);
// a new line's number asks who wrote it (archive.js).
function diffView(path, diff) {
  const numbered = Number.isInteger(diff.start);
  let old = diff.start, now = diff.start;
  const number = (n, side) => el("span", { class: `ln ${side}`, "aria-hidden": "true" }, numbered && n ? String(n) : "");
  const lines = diff.lines.map(([sign, text]) => {
    const kind = sign === "+" ? "add" : sign === "-" ? "del" : "ctx";
    const before = sign === "+" ? null : old++;
    const after = sign === "-" ? null : now++;
    return el("span", { class: kind, "data-old": numbered ? before : null, "data-new": numbered ? after : null },
      number(before, "old"), numbered && after && state.id ? blameButton(path, after) : number(after, "new"),
      el("span", { class: "text" }, `${sign} ${text}\n`));
  });
  if (diff.more) lines.push(el("span", { class: "ctx more" }, el("span", { class: "text" }, `… ${diff.more} more lines\n`)));
  return el("div", { class: `diff${numbered ? " numbered" : ""}` }, el("div", { class: "path" }, path), el("pre", {}, ...lines));
}

function blocksText(message, type) {
  return (message?.content || []).filter((b) => b.type === type).map((b) => b.text).join("\n");
}

function shortArgs(text) {
  const flat = String(text || "").replace(/\s+/g, " ");
  return flat.length > 80 ? `${flat.slice(0, 80)}…` : flat;
}

$("rewind").addEventListener("click", () => rewindDialog());
$("close").addEventListener("click", () =>
  api("POST", `/api/sessions/${encodeURIComponent(state.id)}/close`, {}).catch((error) => say("error", error.message)));
$("stop").addEventListener("click", () =>
  api("POST", `/api/sessions/${encodeURIComponent(state.id)}/stop`, {}).catch((error) => say("error", error.message)));
$("mode").addEventListener("change", () => changeSettings({ permissionMode: $("mode").value }));
$("model").addEventListener("change", () => changeSettings({ model: $("model").value }));

// The first screen, and the one a new session starts from: a folder, what was done there
// lately, and the composer, whose first message starts the session there.
function startDraft(cwd) {
  if (state.source) state.source.close();
  Object.assign(state, { id: null, cwd: null, source: null, draft: { cwd }, calls: new Map(),
    live: { text: null, reasoning: null }, asks: new Map(), agents: new Map(), attached: [],
    usage: { tokens: 0, cost: 0, priced: false }, contextUsed: 0 });
  sessionStorage.removeItem("dsh-session");
  history.replaceState(null, "", location.pathname);
  for (const id of ["todos", "agents", "usage", "context", "goal"]) $(id).replaceChildren();
  drawAttached();
  setBusy(false);
  const defaults = state.listing?.defaults || {};
  choices($("mode"), defaults.modes || [], defaults.mode || "");
  choices($("model"), defaults.models || [], defaults.model || "");
  state.imageInput = !!defaults.imageInput;
  $("attach").disabled = !state.imageInput;
  $("send").disabled = false;
  // Nothing to rewind or close before the session starts.
  $("rewind").hidden = $("close").hidden = true;
  drawHeading();
  drawWelcome();
  renderSessions();
  openDrawer(false);
}

function drawWelcome() {
  const cwd = state.draft.cwd;
  const here = (state.listing?.workspaces || []).find((w) => w.cwd === cwd)?.sessions || [];
  const recent = here.slice(0, 5).map((session) => el("li", {}, el("button", {
    type: "button", class: "recent", onclick: () => openSession(cwd, session.id).catch((error) => say("error", error.message)),
  }, el("span", { class: "name" }, sessionName(session) || "(no task yet)"), el("small", {}, sessionMeta(session)))));
  $("transcript").replaceChildren(el("div", { id: "welcome" },
    el("h2", {}, "What should dsh do?"),
    el("p", {}, "Your first message starts a session in ", el("code", {}, cwd), ". ",
      el("button", { type: "button", class: "link", onclick: () => newSessionDialog() }, "Another folder…")),
    recent.length ? el("h3", {}, `Recent in ${folderName(cwd)}`) : null,
    recent.length ? el("ul", { class: "recent-list" }, ...recent) : null));
}

// On a phone the session list is a drawer over the conversation.
function openDrawer(open) {
  document.body.classList.toggle("drawer-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
  if (open) $("search").focus();
}
$("menu").addEventListener("click", () => openDrawer(true));
$("drawer-close").addEventListener("click", () => { openDrawer(false); $("menu").focus(); });
$("scrim").addEventListener("click", () => openDrawer(false));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && document.body.classList.contains("drawer-open")) {
    openDrawer(false);
    $("menu").focus();
  }
});

// The theme: the system's, unless this browser chose light or dark.
function applyTheme(theme) {
  if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  $("theme").value = theme || "system";
}
applyTheme(localStorage.getItem("dsh-theme"));
$("theme").addEventListener("change", () => {
  localStorage.setItem("dsh-theme", $("theme").value);
  applyTheme($("theme").value);
});

// Once every script is read: a reload (or a second tab) comes back to the session it showed,
// running turn and all; else the first screen, in the folder `dsh web` was started in.
document.addEventListener("DOMContentLoaded", () => {
  askForKey();
  loadSessions().then(() => {
    const kept = JSON.parse(sessionStorage.getItem("dsh-session") || "null");
    const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
    if (kept && (!wanted || kept.id === wanted)) {
      openSession(kept.cwd, kept.id).catch((error) => say("error", error.message));
      return;
    }
    const found = wanted && (state.listing.workspaces || []).find((w) => w.sessions.some((s) => s.id === wanted));
    if (found) openSession(found.cwd, wanted).catch((error) => say("error", error.message));
    else startDraft(state.defaultCwd);
  }).catch((error) => say("error", error.message));
});

// dsh web: the session archive. The sidebar's search looks through what every session said
// and did (as `dsh sessions search` does), and a line number of a diff says which session,
// turn and call wrote that line (as `dsh blame` does).
"use strict";

// The sidebar filters by title and folder at once, as keys are typed; the search through every
// session's words is asked for once typing pauses, and shown only while its words are typed.
let searching = null;
$("search").addEventListener("input", () => {
  renderSessions();
  clearTimeout(searching);
  const query = $("search").value.trim();
  if (!query) return;
  searching = setTimeout(() => searchSessions(query), 150);
});

async function searchSessions(query) {
  let found;
  try { found = await api("GET", `/api/search?q=${encodeURIComponent(query)}`); }
  catch (error) { say("error", `Searching the sessions failed: ${error.message}`); return; }
  state.found = { query, hits: new Map(found.hits.map((hit) => [hit.id, hit])) };
  renderSessions();
}

// What the search found of `session` for the words in the search box now, if anything.
function foundOf(session) {
  const found = state.found;
  return found && found.query === $("search").value.trim() ? found.hits.get(session.id) : undefined;
}

// A line number a diff shows: a button that asks who wrote the line, for lines the file has
// now (the new side). Left out of a copy of the diff, as the numbers are.
function blameButton(path, line) {
  return el("button", { type: "button", class: "ln new blame", title: `Who wrote line ${line}?`,
    "aria-label": `Who wrote line ${line} of ${path}`, onclick: () => blameLine(path, line) }, String(line));
}

async function blameLine(path, line) {
  const dialog = $("blame-dialog");
  const back = document.activeElement;
  let blamed, problem = null;
  try { blamed = await api("GET", `/api/sessions/${encodeURIComponent(state.id)}/blame?` +
    new URLSearchParams({ path, line: String(line) })); }
  catch (error) { problem = error.message; }
  const body = problem ? [el("p", { class: "problem", role: "alert" }, problem)]
    : [el("pre", { class: "blamed-line" }, blamed.text), ...originView(blamed.origin)];
  dialog.replaceChildren(el("h2", { id: "blame-title" }, `Line ${line} of ${path}`), ...body,
    el("div", { class: "choices" }, el("button", { type: "button", onclick: () => dialog.close() }, "Close")));
  dialog.onclose = () => back?.isConnected && back.focus();
  showDialog(dialog);
  dialog.querySelector(".choices button").focus();
}

// What wrote a line, said as a person reads it.
function originView(origin) {
  if (!origin) return [el("p", {}, "No dsh session of this folder wrote this line: it was there before, or was written outside dsh.")];
  const session = listed(origin.session);
  const which = origin.session === state.id ? "this session"
    : `the session “${(session && sessionName(session)) || origin.session}”`;
  const by = origin.tool ? ` by its ${origin.tool} call` : "";
  return [el("p", {}, `Written in turn ${origin.turn} of ${which}${by}, ${new Date(origin.at).toLocaleString()}, answering:`),
    el("blockquote", {}, origin.message)];
}

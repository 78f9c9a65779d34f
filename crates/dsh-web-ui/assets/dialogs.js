// dsh web: the dialogs. A question from a session (an approval, the model's questions, an MCP
// server's form), the rewind, and the API key of a first run; each shown so that a key pressed
// before it was drawn does nothing in it.
"use strict";

// The next question waiting, once the dialog is free.
function nextQuestion() {
  const [first] = state.asks.values();
  if (first && !$("ask").open) ask(first);
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
  // What the dialog's keys do: a number chooses, Enter confirms (state.dialogKeys).
  let keys = { choose: null, confirm: () => {} };
  if (event.ask === "approval") {
    // What runs if allowed: the call itself, not only what the model says of it.
    const call = event.call || {};
    const shown = call.diff ? diffView(call.path, call.diff)
      : argumentsView(call.arguments || "");
    const choices = [["once", "Allow once"],
      event.grant ? ["session", `Allow for this session (${event.grant})`] : null,
      ["deny", "Deny, and say why"]].filter(Boolean);
    const radios = choices.map(([value]) => el("input", { type: "radio", name: `approval-${event.id}`, value }));
    // On Deny: a wider sandbox, the network or a call the review denied is never a default.
    const deny = radios[radios.length - 1];
    deny.checked = true;
    const reason = el("input", { type: "text", placeholder: "Why not (the model reads it)", "aria-label": "Reason",
      oninput: () => { deny.checked = true; } });
    const confirm = () => {
      const chosen = radios.find((radio) => radio.checked)?.value;
      if (chosen === "deny") answer({ outcome: "deny", reason: reason.value });
      else if (chosen) answer({ outcome: chosen });
    };
    keys = { choose: (i) => { if (radios[i]) { radios[i].checked = true; radios[i].focus(); } }, confirm };
    content.push(el("h2", {}, `${event.tool} asks for permission`),
      el("p", { class: "call-title" }, call.title || event.tool), shown,
      el("p", {}, "The model says: "), el("pre", {}, event.reason),
      el("div", { class: "choices", role: "radiogroup" },
        ...choices.map(([, label], i) => el("label", {}, radios[i], ` ${i + 1}. ${label}`))),
      reason,
      el("p", { class: "hint" }, `1-${choices.length} or a click chooses · Enter or Answer confirms`),
      el("div", { class: "choices" }, el("button", { type: "button", class: "primary", onclick: confirm }, "Answer")));
  } else if (event.ask === "questions") {
    const fields = event.questions.map((question) => {
      const inputs = question.options.map((option) =>
        el("label", {}, el("input", { type: question.multiSelect ? "checkbox" : "radio", name: question.id, value: option.label }),
          ` ${option.label}`, option.description ? el("small", {}, ` — ${option.description}`) : null));
      const custom = el("input", { type: "text", placeholder: "Or your own answer", "aria-label": "Your own answer" });
      return { question, custom, node: el("fieldset", {}, el("legend", {}, question.question), ...inputs.map((i) => el("div", {}, i)), custom) };
    });
    const confirm = () => answer({ answers: fields.map(({ question, custom, node }) => ({
      id: question.id,
      selected: [...node.querySelectorAll("input:checked")].map((i) => i.value),
      custom: custom.value,
    })) });
    // A number chooses (ticks, for several) among the options of a lone question.
    const options = fields.length === 1 ? [...fields[0].node.querySelectorAll("input[value]")] : [];
    const chosen = () => fields.some(({ custom, node }) => node.querySelector("input:checked") || custom.value.trim());
    keys = {
      choose: (i) => { if (options[i]) { options[i].checked = !options[i].checked || options[i].type === "radio"; options[i].focus(); } },
      // Enter answers what was chosen; with nothing chosen, Answer (or Cancel) says so.
      confirm: () => { if (chosen()) confirm(); },
    };
    content.push(el("h2", {}, "The model asks"), ...fields.map((f) => f.node),
      el("div", { class: "choices" },
        el("button", { type: "button", class: "primary", onclick: confirm }, "Answer"),
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
    const confirm = () => answer({ action: "accept", content: read() });
    keys = { choose: null, confirm };
    content.push(el("h2", {}, `MCP server "${event.server}" asks`), el("p", {}, event.message),
      ...inputs.map((i) => el("div", {}, i.node)),
      el("div", { class: "choices" },
        el("button", { type: "button", class: "primary", onclick: confirm }, "Submit"),
        el("button", { type: "button", onclick: () => answer({ action: "decline" }) }, "Decline")));
  }
  state.dialogKeys = keys;
  dialog.replaceChildren(...content);
  showDialog(dialog);
  // The focus starts on the choice made for you (Deny, for an approval), never on an Allow.
  const start = dialog.querySelector("input:checked") || dialog;
  if (start === dialog) dialog.tabIndex = -1;
  start.focus();
}
// Esc does not throw a question away: it is answered, or withdrawn by the session.
$("ask").addEventListener("cancel", (event) => event.preventDefault());

// The keys held down now, so that a dialog knows which were pressed before it was drawn.
const held = new Set();
window.addEventListener("keydown", (event) => held.add(event.code), true);
window.addEventListener("keyup", (event) => held.delete(event.code), true);
window.addEventListener("blur", () => held.clear());

// Shows `dialog` with what was just put in it. The keys already down were pressed before it
// was drawn: none of them (a held Enter's repeats, a Space's release) acts in it.
function showDialog(dialog) {
  dialog.staleKeys = new Set(held);
  if (!dialog.open) dialog.showModal();
}
document.addEventListener("keydown", (event) => {
  const dialog = event.target.closest?.("dialog[open]");
  if (dialog && (event.repeat || dialog.staleKeys?.has(event.code))) {
    event.preventDefault();
    event.stopPropagation();
  }
}, true);
document.addEventListener("keyup", (event) => {
  const dialog = event.target.closest?.("dialog[open]");
  if (dialog?.staleKeys?.delete(event.code)) {
    event.preventDefault();
    event.stopPropagation();
  }
}, true);

// A question's keys, as in the terminal UI: a number chooses, Enter confirms.
$("ask").addEventListener("keydown", (event) => {
  const keys = state.dialogKeys;
  if (!keys || event.isComposing) return;
  const typing = event.target.matches("input[type=text], input[type=number], input[type=password], textarea");
  if (keys.choose && !typing && /^[1-9]$/.test(event.key)) {
    event.preventDefault();
    keys.choose(Number(event.key) - 1);
  } else if (event.key === "Enter" && !event.target.matches("button, textarea, select")) {
    event.preventDefault();
    keys.confirm();
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
  showDialog(dialog);
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
      el("button", { type: "button", class: "primary", onclick: async () => {
        try {
          await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/rewind`, { ...request, apply: true, acceptedOutside: outside });
          dialog.close();
        } catch (error) { dialog.close(); say("error", error.message); }
      } }, "Rewind"),
      el("button", { type: "button", onclick: () => dialog.close() }, "Cancel")));
  showDialog(dialog);
}


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
  const save = el("button", { type: "submit", class: "primary" }, "Check and save");
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
  if (wanted.problem) {
    // No key may be sent to this provider's address: say why, and take none.
    problem.textContent = wanted.problem;
    input.disabled = true;
    save.disabled = true;
  }
  dialog.replaceChildren(form);
  dialog.showModal();
  input.focus();
}


// New session: a folder dsh knows (where `dsh web` started, and every folder with sessions), or
// one typed and checked by the server. Nothing is started until the first message is sent.
function newSessionDialog() {
  const dialog = $("new-dialog");
  const listing = state.listing || { workspaces: [] };
  const known = [listing.cwd, ...listing.workspaces.map((w) => w.cwd)]
    .filter((cwd, i, all) => cwd && all.indexOf(cwd) === i);
  const current = state.cwd || state.draft?.cwd || listing.cwd;
  const radios = known.map((cwd) => el("input", { type: "radio", name: "new-folder", value: cwd }));
  const other = el("input", { type: "radio", name: "new-folder", value: "" });
  const typed = el("input", { type: "text", id: "new-path", placeholder: "/home/you/project",
    autocomplete: "off", spellcheck: "false", "aria-label": "Another folder, as an absolute path",
    oninput: () => { other.checked = true; problem.textContent = ""; } });
  const problem = el("p", { class: "problem", role: "alert" });
  (radios.find((radio) => radio.value === current) || radios[0] || other).checked = true;
  const rows = known.map((cwd, i) => el("label", { class: "folder" }, radios[i],
    el("span", {}, el("strong", {}, folderName(cwd)), el("small", {}, cwd,
      cwd === listing.cwd ? " · where dsh web started" : ""))));
  const form = el("form", { method: "dialog" },
    el("h2", { id: "new-dialog-title" }, "New session"),
    el("p", { class: "hint" }, "Pick the workspace. The session starts there with your first message."),
    el("fieldset", { class: "folders" }, el("legend", {}, "Workspaces"), ...rows,
      el("label", { class: "folder other" }, other, el("span", {}, "Another folder"), typed)),
    problem,
    el("div", { class: "choices" },
      el("button", { type: "submit", class: "primary" }, "Start here"),
      el("button", { type: "button", onclick: () => dialog.close() }, "Cancel")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let cwd = radios.find((radio) => radio.checked)?.value;
    if (!cwd) {
      try { cwd = (await api("GET", `/api/folder?path=${encodeURIComponent(typed.value)}`)).cwd; } catch (error) {
        problem.textContent = error.message;
        typed.focus();
        return;
      }
    }
    dialog.close();
    startDraft(cwd);
    $("prompt").focus();
  });
  dialog.replaceChildren(form);
  showDialog(dialog);
  (radios.find((radio) => radio.checked) || typed).focus();
}
$("new-session").addEventListener("click", () => newSessionDialog());

// Rename and Delete of a session, asked in the page (never the browser's prompt or confirm):
// a labelled form, Enter saves and Esc or Cancel leaves it as it was; Delete asks first, its
// focus on Cancel. The focus goes back to where it was, or to the list if that entry is gone.
function sessionDialog(title, body, buttons, focus) {
  const dialog = $("session-dialog");
  const back = document.activeElement;
  // The list may be drawn again meanwhile (a turn ended, a title came): the same button of
  // the same entry then, if it is still listed.
  const control = sessionControlOf(back);
  dialog.onclose = () => {
    focusInList(back?.isConnected ? back : findSessionControl(control) || $("search"));
  };
  const form = el("form", { method: "dialog" }, el("h2", { id: "session-dialog-title" }, title), ...body,
    el("div", { class: "choices" }, ...buttons));
  dialog.replaceChildren(form);
  showDialog(dialog);
  (focus || form.querySelector("button")).focus();
  return form;
}

function renameDialog(cwd, session) {
  const input = el("input", { type: "text", id: "session-title-input", maxlength: "120", autocomplete: "off",
    value: session.title || session.firstTask || "" });
  const problem = el("p", { class: "problem", role: "alert" });
  const form = sessionDialog("Rename the session", [
    el("label", { for: "session-title-input" }, "Title"), input,
    el("p", { class: "hint" }, "One line, at most 120 characters. Empty: no title, the first task is shown."),
    problem],
  [el("button", { type: "submit", class: "primary" }, "Rename"),
    el("button", { type: "button", onclick: () => $("session-dialog").close() }, "Cancel")], input);
  input.select();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try { await retitle(cwd, session, input.value); } catch (error) {
      problem.textContent = error.message;
      input.focus();
      return;
    }
    $("session-dialog").close();
  });
}

function deleteDialog(cwd, session) {
  const cancel = el("button", { type: "button", onclick: () => $("session-dialog").close() }, "Cancel");
  const problem = el("p", { class: "problem", role: "alert" });
  const form = sessionDialog("Delete the session?", [
    el("p", {}, "“", el("strong", {}, sessionName(session) || session.id), "” and its log are removed for good."),
    problem],
  [el("button", { type: "submit", class: "danger" }, "Delete"), cancel], cancel);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try { await removeSession(cwd, session); } catch (error) {
      problem.textContent = error.message;
      return;
    }
    $("session-dialog").close();
  });
}

// The keys, listed on `?`. Those of one letter act only where no text is typed.
const SHORTCUTS = [
  ["?", "this list"],
  ["/", "go to the message box"],
  ["n", "new session"],
  ["Enter", "send the message"],
  ["Shift Enter", "a new line in the message"],
  ["↑ ↓", "what you sent before, on the message's first or last line"],
  ["@", "mention a file; Tab takes the first match"],
  ["1 – 9", "choose in a question; Enter answers"],
  ["Esc", "close the session list or this list"],
];

function shortcutsDialog() {
  const dialog = $("shortcuts-dialog");
  const rows = SHORTCUTS.map(([keys, what]) => el("tr", {},
    el("th", { scope: "row" }, ...keys.split(" ").flatMap((key, i) => [i ? " " : null, el("kbd", {}, key)])),
    el("td", {}, what)));
  dialog.replaceChildren(el("h2", { id: "shortcuts-title" }, "Keyboard shortcuts"),
    el("table", { class: "shortcuts" }, el("tbody", {}, ...rows)),
    el("div", { class: "choices" }, el("button", { type: "button", onclick: () => dialog.close() }, "Close")));
  showDialog(dialog);
  dialog.querySelector("button").focus();
}
$("shortcuts").addEventListener("click", () => shortcutsDialog());

document.addEventListener("keydown", (event) => {
  const typing = event.target.closest?.("input, textarea, select, [contenteditable]");
  if (typing || event.ctrlKey || event.metaKey || event.altKey || document.querySelector("dialog[open]")) return;
  const act = { "?": shortcutsDialog, n: newSessionDialog, "/": () => $("prompt").focus() }[event.key];
  if (act) { event.preventDefault(); act(); }
});

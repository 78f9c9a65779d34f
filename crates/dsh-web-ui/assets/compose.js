// dsh web: the composer. Images attached, the history of what was sent, the terminal UI's
// commands and saved prompts, `@` mentions, and sending.
"use strict";

// Images: attached in the composer (the button, a paste or a drop), stored by the server at
// once (normalised as every image a model sees), sent with the next message, and shown from
// the session's own copies.
// Read with the token in a header and shown from a blob: the token is never in an image's
// address, where history and "open image in new tab" would keep it.
// Before the session starts, an image is kept here, shown from its file, and stored once the
// first message starts the session.
function thumbnail(image) {
  if (image.file) return el("img", { class: "thumbnail", alt: image.file.name, src: image.url });
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
    if (!state.id) { state.attached.push({ file, url: URL.createObjectURL(file) }); continue; }
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
  scrollToEnd();
}

// The session a first message starts: opened in the folder chosen, with the mode and model
// chosen for it, and the images attached meanwhile stored.
async function startSession() {
  const { cwd, mode, model } = state.draft;
  const defaults = state.listing?.defaults || {};
  await openSession(cwd);
  const change = { ...(mode && mode !== defaults.mode ? { permissionMode: mode } : {}),
    ...(model && model !== defaults.model ? { model } : {}) };
  if (Object.keys(change).length) {
    await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/settings`, change);
  }
  const pending = state.draftImages || [];
  state.draftImages = [];
  for (const { file } of pending) {
    state.attached.push(await api("POST", `/api/sessions/${encodeURIComponent(state.id)}/images`, file));
  }
}

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("prompt").value;
  if (!text.trim() && !state.attached.length) return;
  if (!state.id && !state.draft) return;
  if (state.draft && !/^\/(model|permissions|plan)(\s|$)/.test(text.trim())) {
    $("send").disabled = true;
    state.draftImages = state.attached;
    try { await startSession(); } catch (error) {
      $("send").disabled = false;
      say("error", error.message);
      return;
    }
  }
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

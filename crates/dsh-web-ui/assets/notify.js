// dsh web: notifications. While the tab is hidden, a browser notification says that a turn
// ended or that dsh asks something (an approval, the model's questions, a server's form), once
// the user allowed them through the Notify me button: the page never asks on its own.
"use strict";

const notifying = () => "Notification" in window && Notification.permission === "granted";

// The button shows while there is something to ask for, and says when the browser refused.
function drawNotify() {
  const button = $("notify");
  if (!("Notification" in window)) { button.hidden = true; return; }
  button.hidden = Notification.permission === "granted";
  button.disabled = Notification.permission === "denied";
  button.textContent = Notification.permission === "denied" ? "Notifications blocked" : "Notify me";
}
$("notify").addEventListener("click", async () => {
  try { await Notification.requestPermission(); } finally { drawNotify(); }
});
drawNotify();

// A notification when the tab is hidden and they were allowed; a click brings the tab back.
// Reports read from the backlog (a reload) are not news: only those that come live count.
function notify(title, body) {
  if (!document.hidden || !notifying() || !state.caughtUp) return;
  const name = sessionName(listed(state.id) || {}) || "dsh";
  const shown = new Notification(title, { body: `${name}\n${body}`, tag: `dsh-${state.id}` });
  shown.onclick = () => { window.focus(); shown.close(); };
}

// What a question from the session is, in the words of a notification.
function notifyAsk(event) {
  if (event.ask === "approval") notify("dsh asks for your approval", `${event.tool}: ${event.call?.title || event.reason || ""}`);
  else if (event.ask === "questions") notify("dsh has a question", event.questions?.[0]?.question || "");
  else if (event.ask === "form") notify(`${event.server} asks`, event.message || "");
}

"""dsh web in real browsers: Debian's Chromium and Firefox ESR, driven by Playwright (each
launched from its own executable, so nothing is downloaded; Firefox over WebDriver BiDi),
against `dsh web` and the scripted model server. Every test runs in both.

Needs DSH_BIN and SCRIPTED_SERVER_BIN (scripts/web-browser-tests sets them), Playwright for
Python, /usr/bin/chromium and /usr/bin/firefox-esr. Without them the tests are skipped, unless
DSH_TEST_REQUIRE_BROWSER=1 (CI), which makes that a failure. test_layout.py saves the screens
docs/web.md shows.
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import unittest
import urllib.request

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FIREFOX = shutil.which("firefox-esr") or "/usr/bin/firefox-esr"
# As root (CI) Chromium needs --no-sandbox; the rest keep it off a network it cannot reach.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
WAIT = 30_000  # ms: a limit, never a delay
# A valid 1x1 PNG, the image the composer attaches.
DOT_PNG = bytes([
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 252, 207, 192, 240, 31, 0,
    5, 5, 2, 0, 95, 200, 241, 210, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
])

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - reported below
    sync_playwright = None


def missing():
    if sync_playwright is None:
        return "Playwright for Python is not installed (pip install playwright)"
    if not os.path.exists(CHROMIUM):
        return "Chromium is not installed (apt-get install chromium)"
    if not os.path.exists(FIREFOX):
        return "Firefox is not installed (apt-get install firefox-esr)"
    if not (os.environ.get("DSH_BIN") and os.environ.get("SCRIPTED_SERVER_BIN")):
        return "DSH_BIN and SCRIPTED_SERVER_BIN are not set (run scripts/web-browser-tests)"
    return None


REASON = missing()
if REASON and os.environ.get("DSH_TEST_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"the browser tests must run here: {REASON}")


def escalate(command):
    return {"calls": [["bash", {
        "command": command, "description": "print a word",
        "sandbox_permissions": "danger-full-access", "justification": "needs the whole machine"}]]}


# Stands in for the browser's notifications and the tab's visibility, so that a test can allow
# them, hide the tab and read what was shown (no real notification, in either browser).
NOTIFICATIONS = """
window.__notes = []; window.__asked = 0; window.__hidden = false;
class FakeNotification {
  constructor(title, options) {
    window.__notes.push([title, (options || {}).body || ""]);
    // Counted where a test's expect() can wait for it (the page's CSP forbids a waited-for
    // function: it would be eval).
    document.documentElement.dataset.notes = String(window.__notes.length);
  }
  close() {}
}
FakeNotification.permission = "default";
FakeNotification.requestPermission = async () => {
  window.__asked += 1; FakeNotification.permission = "granted"; return "granted";
};
Object.defineProperty(window, "Notification", { value: FakeNotification, configurable: true, writable: true });
Object.defineProperty(Document.prototype, "hidden", { get() { return window.__hidden; }, configurable: true });
"""


class Served:
    """A scripted model server playing `turns` (and `titles` for the title requests), and `dsh
    web` in a fresh home and workspace."""

    def __init__(self, turns, args=(), key="test-key", titles=()):
        self.dir = tempfile.TemporaryDirectory(prefix="dsh-web-test-")
        self.home = os.path.join(self.dir.name, "home")
        self.ws = os.path.join(self.dir.name, "ws")
        os.makedirs(self.home)
        os.makedirs(self.ws)
        script = os.path.join(self.dir.name, "turns.json")
        with open(script, "w", encoding="utf-8") as f:
            json.dump(turns, f)
        model_env = dict(os.environ, SCRIPTED_SERVER_TITLES=json.dumps(list(titles)))
        self.model = subprocess.Popen([os.environ["SCRIPTED_SERVER_BIN"], "--turns", script],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      env=model_env)
        base = self.model.stdout.readline().strip()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
        env.update({"DSH_HOME": self.home, "DEEPSEEK_BASE_URL": base})
        if key:
            env["DEEPSEEK_API_KEY"] = key
        self.web = subprocess.Popen([os.environ["DSH_BIN"], "web", "--port", "0", *args], env=env,
                                    cwd=self.ws, stdout=subprocess.PIPE, text=True)
        line = self.web.stdout.readline().strip()
        self.url = line.removeprefix("dsh web: open ")
        self.base, self.token = self.url.split("/#token=")

    def sessions(self):
        request = urllib.request.Request(f"{self.base}/api/sessions",
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            listing = json.load(answer)
        return [s for w in listing["workspaces"] for s in w["sessions"]]

    def close(self):
        self.web.terminate()
        self.web.wait(timeout=20)
        self.web.stdout.close()
        self.model.stdin.close()
        self.model.wait(timeout=10)
        self.model.stdout.close()
        self.dir.cleanup()


class Browser:
    """A browser a subclass launches, and what every test does with it."""

    @classmethod
    def launch(cls, playwright):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.playwright = sync_playwright().start()
        cls.browser = cls.launch(cls.playwright)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.playwright.stop()

    def serve(self, turns, args=(), key="test-key", titles=()):
        served = Served(turns, args, key, titles)
        self.addCleanup(served.close)
        context = self.browser.new_context()
        self.addCleanup(context.close)
        return served, context

    def new_session(self, page, served):
        """The first screen: the composer's first message starts a session in the workspace."""
        page.goto(served.url)
        expect(page.locator("#welcome")).to_contain_text(served.ws, timeout=WAIT)
        expect(page.locator("#send")).to_be_enabled()

    def started(self, page):
        """The id of the session the page shows, once it has one."""
        title = page.locator("#session-title")
        expect(title).to_have_attribute("data-session", re.compile("."), timeout=WAIT)
        return title.get_attribute("data-session")

    def notes_reach(self, page, count):
        """Waits until the stand-in for notifications has shown `count` of them."""
        expect(page.locator("html")).to_have_attribute("data-notes", str(count), timeout=WAIT)

    def send(self, page, text):
        page.fill("#prompt", text)
        page.press("#prompt", "Enter")



class PageTests(Browser):
    """The tests, for a browser a subclass launches."""

    def test_a_two_turn_conversation(self):
        served, context = self.serve([
            {"reasoning": "thinking it over", "text": "first **answer**\n\n```rust\nfn main() {}\n```"},
            {"text": "second answer"},
        ], titles=["Greeting the agent"])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "hello there")
        transcript = page.locator("#transcript")
        # Markdown is rendered (on the server).
        expect(transcript.locator("strong")).to_have_text("answer", timeout=WAIT)
        expect(transcript).to_contain_text("hello there")
        # After the first turn the model titles the session: the sidebar and the session bar
        # show the title, not the first task; the conversation has no word of it.
        expect(page.locator("#sessions a.open .name")).to_have_text("Greeting the agent", timeout=WAIT)
        expect(page.locator("#session-title")).to_have_text("Greeting the agent")
        expect(transcript).not_to_contain_text("session titled")
        self.send(page, "and again")
        expect(transcript).to_contain_text("second answer", timeout=WAIT)
        expect(page.locator("#send")).to_be_enabled()

    def test_an_escalation_approved_and_one_denied(self):
        served, context = self.serve([
            escalate("echo allowed-run"), {"text": "ran it"},
            escalate("echo denied-run"), {"text": "understood"},
        ])
        page = context.new_page()
        self.new_session(page, served)
        # The Enter that sends the message is held down: its repeats reach the dialog that
        # opens meanwhile, and must not answer it.
        page.fill("#prompt", "do it")
        page.focus("#prompt")
        page.keyboard.down("Enter")
        dialog = page.locator("dialog#ask")
        expect(dialog).to_contain_text("needs the whole machine", timeout=WAIT)
        # What is approved is the call itself, shown beside what the model says of it.
        expect(dialog.locator("pre.arguments")).to_contain_text("echo allowed-run")
        # It opens on Deny, with the focus there.
        expect(dialog.get_by_label("Deny, and say why")).to_be_checked()
        expect(dialog.get_by_label("Deny, and say why")).to_be_focused()
        page.keyboard.down("Enter")  # a repeat
        page.keyboard.up("Enter")
        expect(dialog).to_be_visible()
        expect(dialog.get_by_label("Deny, and say why")).to_be_checked()
        # A number chooses; only Enter answers.
        page.keyboard.press("1")
        expect(dialog.get_by_label("Allow once")).to_be_checked()
        expect(dialog).to_be_visible()
        page.keyboard.press("Enter")
        expect(dialog).to_be_hidden()
        expect(page.locator("#transcript")).to_contain_text("ran it", timeout=WAIT)
        self.send(page, "again")
        expect(dialog).to_be_visible(timeout=WAIT)
        expect(dialog.get_by_label("Deny, and say why")).to_be_checked()
        dialog.get_by_label("Reason").fill("not on this machine")
        dialog.get_by_role("button", name="Answer").click()
        expect(page.locator("#transcript")).to_contain_text("understood", timeout=WAIT)
        calls = page.locator("details.call")
        expect(calls.nth(0)).to_contain_text("allowed-run")
        expect(calls.nth(1)).to_contain_text("the user said: not on this machine")

    def test_a_question_answered(self):
        served, context = self.serve([
            {"calls": [["ask_user_question", {"questions": [{
                "id": "db", "question": "Which database?",
                "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "one file"}]}]}]]},
            {"text": "SQLite it is"},
        ])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "set up storage")
        dialog = page.locator("dialog#ask")
        expect(dialog).to_contain_text("Which database?", timeout=WAIT)
        dialog.get_by_label("SQLite").check()
        dialog.get_by_role("button", name="Answer").click()
        expect(page.locator("#transcript")).to_contain_text("SQLite it is", timeout=WAIT)
        expect(page.locator("details.call").first).to_contain_text('"selected":["SQLite"]')

    def test_a_diff_the_todo_list_and_token_use(self):
        served, context = self.serve([
            {"calls": [["todo_write", {"todos": [
                {"content": "write the notes", "status": "in_progress"},
                {"content": "check them", "status": "pending"}]}]]},
            {"calls": [["write", {"file_path": "notes.txt", "content": "first line\nsecond line\n"}]]},
            {"calls": [["edit", {"file_path": "old.txt", "old_string": "three\n", "new_string": "THREE\n"}]]},
            {"text": "written"},
        ])
        with open(os.path.join(served.ws, "old.txt"), "w") as f:
            f.write("one\ntwo\nthree\nfour\n")
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "write notes")
        expect(page.locator("#transcript")).to_contain_text("written", timeout=WAIT)
        diff = page.locator("details.call .diff").first
        expect(diff).to_contain_text("notes.txt")
        expect(diff.locator(".add")).to_have_count(2)
        expect(diff.locator(".add .text").first).to_have_text("+ first line\n")
        # Numbered as a code review numbers lines: a new file from 1, on the new side only.
        expect(diff.locator(".add").nth(1).locator(".ln.new")).to_have_text("2")
        expect(diff.locator(".add").nth(1).locator(".ln.old")).to_have_text("")
        # An edit is numbered where its text is in the file: line 3, old and new.
        edit = page.locator("details.call .diff").nth(1)
        expect(edit).to_contain_text("old.txt")
        expect(edit.locator(".del .ln.old")).to_have_text("3")
        expect(edit.locator(".del .ln.new")).to_have_text("")
        expect(edit.locator(".add .ln.new")).to_have_text("3")
        expect(page.locator("#todos li")).to_have_count(2)
        expect(page.locator("#todos li.in_progress")).to_have_text("write the notes")
        # Four requests of 110 tokens, and the title's 45.
        expect(page.locator("#usage")).to_contain_text("485 tokens", timeout=WAIT)
        # The context left: the last request's 110 tokens of the route's million.
        context_left = page.locator("#context")
        expect(context_left).to_have_text("100% context left")
        expect(context_left).to_have_attribute("title", re.compile(r"^110 of the model's 1.000.000 tokens"))

    def test_the_archive_searched_and_a_line_blamed_from_the_page(self):
        served, context = self.serve([
            {"calls": [["write", {"file_path": "notes.txt", "content": "alpha\nbeta\n"}]]},
            {"text": "wrote them with zanzibar flair"},
            {"text": "the other answer"},
        ])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "write the notes")
        expect(page.locator("#transcript")).to_contain_text("zanzibar flair", timeout=WAIT)
        # A new line's number asks who wrote it: this session's turn and call, and the
        # message it answered; the focus comes back to the number.
        number = page.locator("details.call .diff .add").nth(1).get_by_role("button")
        expect(number).to_have_text("2")
        number.click()
        dialog = page.get_by_role("dialog", name="Line 2 of notes.txt")
        expect(dialog.locator(".blamed-line")).to_have_text("beta", timeout=WAIT)
        expect(dialog).to_contain_text("Written in turn 1 of this session by its write call")
        expect(dialog.locator("blockquote")).to_have_text("write the notes")
        dialog.get_by_role("button", name="Close").click()
        expect(dialog).to_be_hidden()
        expect(number).to_be_focused()
        # A second session; the search finds the first by a word only its answer holds,
        # with the turn and the words around it, and an empty search shows both again.
        other = context.new_page()
        self.new_session(other, served)
        self.send(other, "another task")
        expect(other.locator("#transcript")).to_contain_text("the other answer", timeout=WAIT)
        entries = other.locator("#sessions .session")
        expect(entries).to_have_count(2, timeout=WAIT)
        other.fill("#search", "zanzibar")
        expect(entries).to_have_count(1, timeout=WAIT)
        expect(entries.first.locator(".name")).to_have_text("write the notes")
        expect(entries.first.locator(".snippet")).to_have_text(
            "turn 1: wrote them with zanzibar flair", timeout=WAIT)
        other.fill("#search", "")
        expect(entries).to_have_count(2)
        expect(other.locator("#sessions .snippet")).to_have_count(0)

    def test_cards_a_presentation_a_goal_and_a_review_decision(self):
        served, context = self.serve([
            {"calls": [["create_goal", {"objective": "Tidy the notes"}]]},
            {"calls": [["update_goal", {"goal_id": "{{result:/goal/id}}", "revision": 1,
                                        "action": "complete"}]]},
            {"calls": [["write", {"file_path": "notes.md", "content": "# Notes\n"}]]},
            {"text": json.dumps({"decision": "allow", "reason": "writes the notes asked for"})},
            {"calls": [["present", {"title": "The notes", "path": "notes.md",
                                    "summary": "Tidied: **one** heading."}]]},
            {"text": "Done."},
        ], args=["--permission-mode", "auto"])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "tidy the notes")
        transcript = page.locator("#transcript")
        expect(transcript).to_contain_text("Done.", timeout=WAIT)
        goals = transcript.locator(".card[data-kind=goal]")
        expect(goals).to_have_count(2)
        expect(goals.nth(0)).to_contain_text("◎ goal set: Tidy the notes")
        expect(goals.nth(1)).to_contain_text("goal complete: Tidy the notes")
        # The goal as it stands is in the status line.
        expect(page.locator("#goal")).to_have_text("Tidy the notes · complete")
        review = transcript.locator(".card[data-kind=review]")
        expect(review).to_contain_text("⚖ auto review allowed: writes the notes asked for")
        expect(review).to_contain_text("reviewed by")
        card = transcript.locator(".card[data-kind=present]")
        expect(card).to_contain_text("▣ The notes")
        expect(card.locator(".path")).to_have_text(os.path.join(served.ws, "notes.md"))
        expect(card.locator("strong")).to_have_text("one")
        # A page that connects later (a reload) is sent the same views.
        page.reload()
        expect(page.locator("#transcript .card")).to_have_count(4, timeout=WAIT)
        shots = os.environ.get("DSH_WEB_CARDS_SCREENSHOTS")
        if shots and self.engine == "chromium":
            for name, width in [("phone", 390), ("desktop", 1280)]:
                page.set_viewport_size({"width": width, "height": 844 if width < 700 else 800})
                card.scroll_into_view_if_needed()
                page.screenshot(path=os.path.join(shots, f"cards-{name}.png"))

    def test_a_plan_reviewed_and_carried_out(self):
        served, context = self.serve([
            {"calls": [["exit_plan_mode", {"plan": "# The plan\n\n1. Edit **main.rs**"}]]},
            {"text": "carrying it out"},
        ], args=["--permission-mode", "plan"])
        page = context.new_page()
        self.new_session(page, served)
        expect(page.locator("#mode")).to_have_value("plan", timeout=WAIT)
        self.send(page, "plan the change")
        dialog = page.locator("dialog#ask")
        expect(dialog).to_contain_text("Carry out this plan?", timeout=WAIT)
        # The plan is shown whole, rendered.
        plan = page.locator("details.call .document")
        expect(plan.locator("h1")).to_have_text("The plan")
        expect(plan.locator("strong")).to_have_text("main.rs")
        dialog.get_by_label("Carry it out (workspace-write)").check()
        dialog.get_by_role("button", name="Answer").click()
        expect(page.locator("#transcript")).to_contain_text("carrying it out", timeout=WAIT)
        expect(page.locator("#mode")).to_have_value("workspace-write")

    def test_the_mode_is_switched_between_turns(self):
        served, context = self.serve([{"text": "as you were"}, {"text": "read only now"}])
        page = context.new_page()
        self.new_session(page, served)
        expect(page.locator("#mode")).to_have_value("workspace-write", timeout=WAIT)
        self.send(page, "hello")
        expect(page.locator("#transcript")).to_contain_text("as you were", timeout=WAIT)
        page.select_option("#mode", "read-only")
        expect(page.locator("#mode")).to_be_enabled(timeout=WAIT)
        # The session reopened so: its log says so, and the page shows it after a reload.
        page.reload()
        expect(page.locator("#mode")).to_have_value("read-only", timeout=WAIT)
        self.send(page, "look around")
        expect(page.locator("#transcript")).to_contain_text("read only now", timeout=WAIT)

    def test_a_reopened_session_shows_the_mode_it_runs_under(self):
        served, context = self.serve([{"text": "started"}])
        page = context.new_page()
        self.new_session(page, served)
        expect(page.locator("#mode")).to_have_value("workspace-write", timeout=WAIT)
        self.send(page, "hello")
        expect(page.locator("#transcript")).to_contain_text("started", timeout=WAIT)
        for mode in ["danger-full-access", "read-only"]:
            self.send(page, f"/permissions {mode}")
            expect(page.locator("#mode")).to_have_value(mode, timeout=WAIT)
            expect(page.locator("#mode")).to_be_enabled(timeout=WAIT)
            # The run here ends; opening the session again builds a new run from its log.
            page.click("#close")
            expect(page.locator("#transcript")).to_contain_text("run has ended", timeout=WAIT)
            page.locator("#sessions a.open").click(position={"x": 4, "y": 4})
            expect(page.locator("#transcript")).not_to_contain_text("run has ended", timeout=WAIT)
            expect(page.locator("#mode")).to_have_value(mode, timeout=WAIT)
            self.send(page, "/status")
            expect(page.locator("#transcript .notice").last).to_contain_text(f" · {mode} · ")
            self.send(page, "/permissions")
            expect(page.locator("#transcript .notice").last).to_have_text(
                f"The permission mode is {mode}.")

    def test_a_rewind_from_the_page(self):
        served, context = self.serve([
            {"calls": [["write", {"file_path": "a.txt", "content": "one\n"}]]}, {"text": "wrote a"},
            {"calls": [["write", {"file_path": "b.txt", "content": "two\n"}]]}, {"text": "wrote b"},
        ])
        page = context.new_page()
        self.new_session(page, served)
        for task, answer in [("make a", "wrote a"), ("make b", "wrote b")]:
            self.send(page, task)
            expect(page.locator("#transcript")).to_contain_text(answer, timeout=WAIT)
            expect(page.locator("#rewind")).to_be_enabled(timeout=WAIT)
        page.click("#rewind")
        dialog = page.locator("dialog#rewind-dialog")
        turn = dialog.locator("li", has_text="Turn 2: make b")
        turn.get_by_role("button", name="Files and conversation").click()
        expect(dialog).to_contain_text("Removed", timeout=WAIT)
        expect(dialog.locator("pre")).to_contain_text("b.txt")
        dialog.get_by_role("button", name="Rewind").click()
        expect(page.locator("#transcript")).to_contain_text("to the start of turn 2", timeout=WAIT)
        self.assertFalse(os.path.exists(os.path.join(served.ws, "b.txt")))
        self.assertTrue(os.path.exists(os.path.join(served.ws, "a.txt")))

    def test_the_composer_recalls_and_takes_commands(self):
        served, context = self.serve([{"text": "hi back"}, {"text": "reviewed it"}])
        # The user's own saved prompt (a workspace's needs the folder trusted).
        os.makedirs(os.path.join(served.home, "prompts"))
        with open(os.path.join(served.home, "prompts", "review.md"), "w") as f:
            f.write("Review $ARGUMENTS closely.\n")
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "hello")
        expect(page.locator("#transcript")).to_contain_text("hi back", timeout=WAIT)
        page.press("#prompt", "ArrowUp")
        expect(page.locator("#prompt")).to_have_value("hello")
        page.press("#prompt", "ArrowDown")
        expect(page.locator("#prompt")).to_have_value("")
        self.send(page, "/permissions read-only")
        expect(page.locator("#mode")).to_have_value("read-only", timeout=WAIT)
        self.send(page, "/diff")
        expect(page.locator("#transcript")).to_contain_text("git diff failed", timeout=WAIT)
        self.send(page, "/nope")
        expect(page.locator("#transcript")).to_contain_text("/nope is not a command here")
        self.send(page, "/compact")
        expect(page.locator("#transcript")).to_contain_text("too short to compact", timeout=WAIT)
        # Saved prompts are listed, and one is sent expanded; skills are listed.
        self.send(page, "/prompts")
        expect(page.locator("#transcript")).to_contain_text("/review", timeout=WAIT)
        self.send(page, "/skills")
        expect(page.locator("#transcript")).to_contain_text("No skills found")
        self.send(page, "/review src/main.rs")
        expect(page.locator("#transcript")).to_contain_text("Review src/main.rs closely.", timeout=WAIT)
        expect(page.locator("#transcript")).to_contain_text("reviewed it", timeout=WAIT)
        # The session is renamed, by command and from the sidebar (test_session_dialogs).
        self.send(page, "/rename the review")
        expect(page.locator("#sessions a.open")).to_contain_text("the review", timeout=WAIT)
        # An @ mention completes from the workspace's files.
        os.makedirs(os.path.join(served.ws, "src"))
        with open(os.path.join(served.ws, "src", "main.rs"), "w") as f:
            f.write("fn main() {}\n")
        page.fill("#prompt", "")
        page.type("#prompt", "look at @src/ma")
        expect(page.locator("#mentions button").first).to_have_text("src/main.rs", timeout=WAIT)
        page.press("#prompt", "Tab")
        expect(page.locator("#prompt")).to_have_value("look at @src/main.rs ")

    def test_session_dialogs_rename_and_delete_in_the_page(self):
        served, context = self.serve([{"text": "one"}, {"text": "two"}])
        page = context.new_page()
        prompts = []
        page.on("dialog", lambda dialog: (prompts.append(dialog.type), dialog.dismiss()))
        self.new_session(page, served)
        self.send(page, "the first session")
        expect(page.locator("#transcript")).to_contain_text("one", timeout=WAIT)
        entry = page.locator("#sessions .session").first
        expect(entry.locator(".name")).to_have_text("the first session", timeout=WAIT)
        # Rename from the keyboard: Tab from the entry reaches its buttons; Enter opens the
        # page's own dialog, labelled, its field focused with the name selected.
        entry.locator("a").focus()
        # The list is drawn anew whenever a turn ends or a title comes: the focus stays on
        # the same control of the same entry, never falling to the page meanwhile.
        page.evaluate("renderSessions()")
        expect(entry.locator("a")).to_be_focused()
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        rename = entry.get_by_role("button", name="Rename")
        expect(rename).to_be_focused()
        page.evaluate("renderSessions()")
        expect(rename).to_be_focused()
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog", name="Rename the session")
        expect(dialog).to_be_visible()
        field = dialog.get_by_label("Title")
        expect(field).to_be_focused()
        expect(field).to_have_value("the first session")
        # Esc leaves it as it was, the focus back on Rename.
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        expect(entry.locator(".name")).to_have_text("the first session")
        expect(rename).to_be_focused()
        page.keyboard.press("Enter")
        expect(field).to_be_focused()
        page.keyboard.type("Storage plans")
        page.keyboard.press("Enter")
        expect(dialog).to_be_hidden(timeout=WAIT)
        expect(page.locator("#sessions a.open .name")).to_have_text("Storage plans", timeout=WAIT)
        expect(page.locator("#session-title")).to_have_text("Storage plans")
        # Delete asks first, in the page, its focus on Cancel; the open session is refused,
        # said in the dialog, which stays.
        entry = page.locator("#sessions .session").first
        entry.hover()
        entry.get_by_role("button", name="Delete").click()
        confirm = page.get_by_role("dialog", name="Delete the session?")
        expect(confirm).to_contain_text("Storage plans")
        expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
        confirm.get_by_role("button", name="Delete").click()
        expect(confirm.locator(".problem")).to_contain_text("open", timeout=WAIT)
        expect(confirm).to_be_visible()
        confirm.get_by_role("button", name="Cancel").click()
        expect(confirm).to_be_hidden()
        # Closed here, it is deleted once confirmed.
        page.locator("#close").click()
        expect(page.locator("#transcript")).to_contain_text("run has ended here", timeout=WAIT)
        entry = page.locator("#sessions .session").first
        entry.hover()
        entry.get_by_role("button", name="Delete").click()
        confirm.get_by_role("button", name="Delete").click()
        expect(confirm).to_be_hidden(timeout=WAIT)
        expect(page.locator("#sessions .session")).to_have_count(0, timeout=WAIT)
        self.assertEqual(served.sessions(), [])
        self.assertEqual(prompts, [], "no browser prompt, confirm or alert")

    def test_notifications_while_the_tab_is_hidden(self):
        served, context = self.serve([
            {"text": "hello back"},
            escalate("echo allowed-run"), {"text": "ran it"},
            {"calls": [["ask_user_question", {"questions": [{
                "id": "db", "question": "Which database?",
                "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}]]},
            {"text": "SQLite it is"},
        ])
        context.add_init_script(NOTIFICATIONS)
        page = context.new_page()
        self.new_session(page, served)
        notes = lambda: [title for title, _ in page.evaluate("window.__notes")]
        # Nothing is asked on load: the button asks.
        self.assertEqual(page.evaluate("window.__asked"), 0)
        button = page.get_by_role("button", name="Notify me")
        expect(button).to_be_visible()
        button.click()
        expect(button).to_be_hidden()
        self.assertEqual(page.evaluate("window.__asked"), 1)
        # While the tab is shown, a turn's end is no notification.
        self.send(page, "hello")
        expect(page.locator("#transcript")).to_contain_text("hello back", timeout=WAIT)
        expect(page.locator("#stop")).to_be_disabled(timeout=WAIT)
        self.assertEqual(notes(), [])
        # Hidden: an approval waiting, then the turn's end.
        page.evaluate("window.__hidden = true")
        self.send(page, "do it")
        dialog = page.locator("dialog#ask")
        expect(dialog).to_be_visible(timeout=WAIT)
        self.notes_reach(page, 1)
        self.assertEqual(notes(), ["dsh asks for your approval"])
        dialog.get_by_label("Allow once").check()
        dialog.get_by_role("button", name="Answer").click()
        self.notes_reach(page, 2)
        self.assertEqual(notes()[1], "dsh finished the turn")
        self.assertIn("ran it", page.evaluate("window.__notes[1][1]"))
        # A question, then the turn's end.
        self.send(page, "set up storage")
        expect(dialog).to_contain_text("Which database?", timeout=WAIT)
        self.notes_reach(page, 3)
        self.assertEqual(notes()[2], "dsh has a question")
        self.assertIn("Which database?", page.evaluate("window.__notes[2][1]"))
        dialog.get_by_label("SQLite").check()
        dialog.get_by_role("button", name="Answer").click()
        self.notes_reach(page, 4)
        self.assertEqual(notes()[3], "dsh finished the turn")

    def test_a_subagent_is_followed_in_its_panel(self):
        served, context = self.serve([
            {"calls": [["subagent", {"description": "count files", "prompt": "Count the files."}]]},
            {"calls": [["bash", {"command": "echo child-ran", "description": "count"}]]},
            {"text": "there are **three**"},
            {"text": "the subagent counted three"},
        ])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "delegate the count")
        expect(page.locator("#transcript")).to_contain_text("the subagent counted three", timeout=WAIT)
        agent = page.locator("details.agent")
        expect(agent).to_have_count(1)
        expect(agent.locator("> summary")).to_contain_text("subagent-1 · count files · completed · 1 call")
        # Its work is its own, folded under it, never in the main transcript.
        expect(page.locator("#transcript")).not_to_contain_text("child-ran")
        agent.locator("> summary").click()
        expect(agent.locator(".agent-body")).to_contain_text("Count the files.")
        expect(agent.locator(".agent-body details.call .result")).to_contain_text("child-ran")
        expect(agent.locator(".agent-body strong")).to_have_text("three")
        # A reload draws it again from what the session reported.
        page.reload()
        expect(page.locator("details.agent > summary")).to_contain_text("completed", timeout=WAIT)

    def test_an_image_is_attached_and_sent(self):
        served, context = self.serve([{"text": "a single dot"}],
                                     args=["--model", "deepseek-v4-flash-vision-exp"])
        page = context.new_page()
        self.new_session(page, served)
        expect(page.locator("#attach")).to_be_enabled(timeout=WAIT)
        page.set_input_files("#image-file", files=[
            {"name": "dot.png", "mimeType": "image/png", "buffer": DOT_PNG}])
        thumbnail = page.locator("#attached img.thumbnail")
        expect(thumbnail).to_have_count(1, timeout=WAIT)
        # The picture is drawn from the session's copy (the token goes with it).
        page.wait_for_function("document.querySelector('#attached img').naturalWidth === 1")
        self.send(page, "what is in it?")
        expect(page.locator("#transcript")).to_contain_text("a single dot", timeout=WAIT)
        expect(page.locator("#attached img")).to_have_count(0)
        expect(page.locator(".message.user img.thumbnail")).to_have_count(1)
        # Reloaded, the message still shows its image.
        page.reload()
        expect(page.locator(".message.user img.thumbnail")).to_have_count(1, timeout=WAIT)

    def test_a_first_run_asks_for_the_key(self):
        served, context = self.serve([{"text": "signed in"}], key=None)
        page = context.new_page()
        page.goto(served.url)
        dialog = page.locator("dialog#key-dialog")
        expect(dialog).to_contain_text("dsh has no key for deepseek yet", timeout=WAIT)
        dialog.get_by_label("API key for deepseek").fill("refused-by-the-provider")
        dialog.get_by_role("button", name="Check and save").click()
        expect(dialog.locator(".problem")).to_contain_text("refused the API key", timeout=WAIT)
        dialog.get_by_label("API key for deepseek").fill("sk-from-the-page")
        dialog.get_by_role("button", name="Check and save").click()
        expect(dialog).to_be_hidden(timeout=WAIT)
        with open(os.path.join(served.home, "credentials"), encoding="utf-8") as f:
            self.assertIn("DEEPSEEK_API_KEY='sk-from-the-page'", f.read())
        self.new_session(page, served)
        self.send(page, "hello")
        expect(page.locator("#transcript")).to_contain_text("signed in", timeout=WAIT)

    def test_stop_and_reload_mid_turn(self):
        # The answer starts, then stalls: seeing its start proves the model has the request.
        served, context = self.serve([{"stall": "thinking about"}, {"text": "still here"}])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "take your time")
        expect(page.locator("#transcript")).to_contain_text("thinking about", timeout=WAIT)
        expect(page.locator("#stop")).to_be_enabled()
        # A reload while the turn runs finds the session and the running turn.
        page.reload()
        expect(page.locator("#transcript")).to_contain_text("take your time", timeout=WAIT)
        expect(page.locator("#stop")).to_be_enabled(timeout=WAIT)
        page.click("#stop")
        expect(page.locator("#stop")).to_be_disabled(timeout=WAIT)
        self.send(page, "and now")
        expect(page.locator("#transcript")).to_contain_text("still here", timeout=WAIT)

    def test_a_stopped_commands_output_stays(self):
        served, context = self.serve([
            {"calls": [["bash", {"command": "echo watched-line; until [ -f release ]; do sleep 0.02; done",
                                 "description": "wait for the test"}]]},
        ])
        page = context.new_page()
        self.new_session(page, served)
        self.send(page, "run it")
        call = page.locator("details.call")
        expect(call.locator(".output")).to_contain_text("watched-line", timeout=WAIT)
        page.click("#stop")
        expect(call.locator(".result")).to_have_text("Error: tool call aborted", timeout=WAIT)
        expect(call.locator(".output")).to_contain_text("watched-line")

    def test_two_sessions_at_once(self):
        served, context = self.serve([{"stall": "A is busy"}, {"text": "answer for B"}])
        first = context.new_page()
        self.new_session(first, served)
        self.send(first, "long job in A")
        expect(first.locator("#transcript")).to_contain_text("A is busy", timeout=WAIT)
        second = context.new_page()
        # The second tab would reopen the first session; it starts its own.
        self.new_session(second, served)
        self.send(second, "quick one in B")
        expect(second.locator("#transcript")).to_contain_text("answer for B", timeout=WAIT)
        self.assertNotEqual(self.started(second), self.started(first))
        expect(first.locator("#stop")).to_be_enabled()
        expect(first.locator("#transcript")).not_to_contain_text("answer for B")
        first.click("#stop")
        expect(first.locator("#stop")).to_be_disabled(timeout=WAIT)
        self.assertEqual(len(served.sessions()), 2)

    def test_a_foreign_page_is_refused(self):
        served, context = self.serve([{"text": "never"}])
        page = context.new_page()
        page.goto(served.url)  # the page now holds the token, in its own origin's storage
        expect(page.locator("#new-session")).to_be_visible(timeout=WAIT)
        before = len(served.sessions())
        attack = f"""<!doctype html><title>attack</title><script>
          fetch({json.dumps(served.base + "/api/sessions")}, {{method: "POST", mode: "no-cors",
            credentials: "include", headers: {{"Content-Type": "text/plain"}},
            body: JSON.stringify({{cwd: {json.dumps(served.ws)}}})}})
            .finally(() => {{ document.title = "sent"; }});
        </script>"""

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = attack.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=site.serve_forever, daemon=True).start()
        self.addCleanup(site.server_close)
        self.addCleanup(site.shutdown)
        page.goto(f"http://127.0.0.1:{site.server_address[1]}/")
        expect(page).to_have_title("sent", timeout=WAIT)
        self.assertEqual(len(served.sessions()), before, "the foreign page opened a session")
        # A browser that never opened the printed address has no token: the page loads (it
        # holds no data) and says so, and gets nothing.
        other = self.browser.new_context()
        self.addCleanup(other.close)
        stranger = other.new_page()
        stranger.goto(served.base + "/")
        expect(stranger.locator("#transcript")).to_contain_text("Not signed in", timeout=WAIT)


@unittest.skipIf(REASON, REASON or "")
class InChromium(PageTests, unittest.TestCase):
    engine = "chromium"

    @classmethod
    def launch(cls, playwright):
        return chromium(playwright)


@unittest.skipIf(REASON, REASON or "")
class InFirefox(PageTests, unittest.TestCase):
    engine = "firefox"

    # The "moz-firefox" channel drives a stock Firefox over WebDriver BiDi, where Playwright's
    # own Firefox build would have to be downloaded.
    @classmethod
    def launch(cls, playwright):
        return firefox(playwright)


def chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def firefox(playwright):
    return playwright.firefox.launch(channel="moz-firefox", executable_path=FIREFOX)


if __name__ == "__main__":
    unittest.main()

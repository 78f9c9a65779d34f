"""dsh web's layout, first screen and themes, in Chromium and Firefox as test_page.py runs them:
usable at a phone's, a tablet's and a desktop's width (nothing scrolls sideways, every control
on screen), a first screen whose composer starts a session, New session without a browser
prompt and without an empty session left behind, light and dark themes, the keyboard alone (the
shortcut list on `?`).

DSH_WEB_SCREENSHOTS=DIR (docs/web is the one docs/web.md shows) saves each view at each width,
light and dark, from Chromium.
"""
import os
import re
import unittest

from test_page import REASON, WAIT, Browser, chromium, escalate, expect, firefox

WIDTHS = [("phone", 390, 844), ("tablet", 768, 1024), ("desktop", 1280, 800)]
SHOTS = os.environ.get("DSH_WEB_SCREENSHOTS")

# A turn of each kind the conversation shows: the todo list, a command that ends well with a
# long line, one that fails, a file written (a diff), an answer with reasoning and code.
CONVERSATION = [
    {"calls": [["todo_write", {"todos": [
        {"content": "read the notes", "status": "completed"},
        {"content": "fix the heading", "status": "in_progress"},
        {"content": "run the checks", "status": "pending"}]}]]},
    {"calls": [["bash", {"command": "echo " + "a-long-unbroken-line-" * 12,
                         "description": "print a long line"}]]},
    {"calls": [["bash", {"command": "test -e missing-file", "description": "look for it"}]]},
    {"calls": [["write", {"file_path": "notes.md", "content":
                          "# Notes\n\nThe heading is fixed, and this line is long enough to "
                          "need wrapping on a phone's screen, or a scroll of its own.\n"}]]},
    {"reasoning": "The heading is fixed; the checks are next.",
     "text": "Fixed the heading in `notes.md`:\n\n```rust\nfn main() {\n    println!(\"the "
             "notes are tidy\");\n}\n```\n\nThe checks pass."},
]


class LayoutTests(Browser):
    def page_at(self, served, context_args, width, height):
        context = self.browser.new_context(viewport={"width": width, "height": height},
                                           **context_args)
        self.addCleanup(context.close)
        return context.new_page()

    def assert_no_sideways_scroll(self, page, where):
        wide, shown = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
        self.assertLessEqual(wide, shown, f"{where}: the page scrolls sideways")

    def assert_on_screen(self, page, locator, what):
        """Shown whole, within the window (once the drawer has slid in)."""
        expect(locator, f"{what} is not on screen").to_be_in_viewport(ratio=1, timeout=WAIT)

    def show_sessions(self, page, narrow):
        """The session list: a drawer opened by the menu on a narrow screen."""
        if narrow:
            expect(page.locator("#sessions")).to_be_hidden()
            page.click("#menu")
        self.assert_on_screen(page, page.locator("#new-session"), "New session")

    def hide_sessions(self, page, narrow):
        if narrow:
            page.keyboard.press("Escape")
            expect(page.locator("#sessions")).to_be_hidden()
            expect(page.locator("#menu")).to_be_focused()

    def shoot(self, page, name):
        """The screen as it is, light and dark, into DSH_WEB_SCREENSHOTS (Chromium's only)."""
        if not SHOTS or self.engine != "chromium":
            return
        os.makedirs(SHOTS, exist_ok=True)
        page.wait_for_function("() => document.getAnimations().length === 0")
        for theme in ["light", "dark"]:
            page.evaluate("theme => applyTheme(theme)", theme)
            page.screenshot(path=os.path.join(SHOTS, f"{name}-{theme}.png"))
        page.evaluate("() => applyTheme(localStorage.getItem('dsh-theme'))")

    def test_usable_at_a_phones_a_tablets_and_a_desktops_width(self):
        for name, width, height in WIDTHS:
            with self.subTest(width=width):
                served, _ = self.serve(CONVERSATION + [
                    escalate("echo allowed-run"), {"text": "ran it"}])
                page = self.page_at(served, {}, width, height)
                narrow = width < 900
                self.new_session(page, served)
                self.assert_no_sideways_scroll(page, f"the first screen at {width}")
                for control in ["#prompt", "#send", "#mode", "#model"]:
                    self.assert_on_screen(page, page.locator(control), control)
                self.shoot(page, f"start-{name}")
                self.show_sessions(page, narrow)
                self.hide_sessions(page, narrow)

                self.send(page, "tidy the notes")
                transcript = page.locator("#transcript")
                expect(transcript).to_contain_text("The checks pass.", timeout=WAIT)
                # The conversation follows its end.
                page.wait_for_function("""() => { const t = document.getElementById("transcript");
                    return t.scrollTop + t.clientHeight >= t.scrollHeight - 2; }""")
                calls = transcript.locator("details.call")
                expect(calls).to_have_count(4)
                # Each call says at a glance how it ended: a command's exit status.
                # Each call says at a glance how it ended and, seen as it ran, how long it took.
                timed = r"^exit %d · (< 0\.1|\d+(\.\d)?) s$"
                expect(calls.nth(1).locator("summary .meta")).to_have_text(re.compile(timed % 0))
                expect(calls.nth(2).locator("summary .meta")).to_have_text(re.compile(timed % 1))
                expect(calls.nth(2)).to_have_attribute("data-state", "failed")
                expect(calls.nth(1).locator(".arguments")).to_contain_text("$ echo a-long-")
                # A change shown is what the call did: its result is not repeated under it.
                expect(calls.nth(3).locator(".diff .add").first).to_contain_text("# Notes")
                expect(calls.nth(3).locator(".result")).to_be_hidden()
                calls.nth(1).locator("summary").click()
                expect(calls.nth(1).locator(".result")).to_contain_text("a-long-unbroken-line-")
                self.assert_no_sideways_scroll(page, f"the conversation at {width}")
                for control in ["#mode", "#model", "#usage", "#todos", "#rewind", "#send"]:
                    self.assert_on_screen(page, page.locator(control), control)
                self.shoot(page, f"conversation-{name}")

                # The session's entry says what it did, once its turn is answered.
                self.show_sessions(page, narrow)
                entry = page.locator("#sessions a.open")
                expect(entry).to_contain_text("tidy the notes", timeout=WAIT)
                expect(entry).to_contain_text("1 turn")
                self.assert_no_sideways_scroll(page, f"the session list at {width}")
                self.shoot(page, f"sessions-{name}")
                self.hide_sessions(page, narrow)

                self.send(page, "run it")
                dialog = page.locator("dialog#ask")
                expect(dialog).to_contain_text("needs the whole machine", timeout=WAIT)
                self.assert_on_screen(page, dialog.get_by_role("button", name="Answer"), "Answer")
                self.assert_no_sideways_scroll(page, f"an approval at {width}")
                self.shoot(page, f"approval-{name}")
                page.keyboard.press("1")
                page.keyboard.press("Enter")
                expect(transcript).to_contain_text("ran it", timeout=WAIT)

    def test_the_first_screen_starts_a_session_and_new_session_asks_for_a_folder(self):
        served, context = self.serve([
            {"calls": [["bash", {"command": "true", "description": "do nothing"}]]},
            {"text": "first done"}, {"text": "second done"}])
        page = context.new_page()
        self.new_session(page, served)
        self.assertEqual(served.sessions(), [])
        self.send(page, "the first task")
        expect(page.locator("#transcript")).to_contain_text("first done", timeout=WAIT)
        # Drawn again from what the session kept, a call is not timed: it was not seen running.
        page.reload()
        expect(page.locator("details.call .meta")).to_have_text("exit 0", timeout=WAIT)
        # The heading names the session by its task, not its id.
        expect(page.locator("#session-title")).to_have_text("the first task", timeout=WAIT)
        first = self.started(page)

        # New session: no browser prompt, nothing started until a message is sent.
        page.on("dialog", lambda dialog: self.fail(f"a browser dialog opened: {dialog.message}"))
        page.click("#new-session")
        dialog = page.locator("dialog#new-dialog")
        expect(dialog.get_by_label(re.compile(re.escape(served.ws)))).to_be_checked()
        other = os.path.join(served.dir.name, "other")
        os.makedirs(other)
        afile = os.path.join(served.dir.name, "a-file")
        open(afile, "w").close()
        path = dialog.get_by_label("Another folder, as an absolute path")
        for typed, said in [("relative/folder", "is not an absolute path"),
                            (other + "/missing", "does not exist"),
                            (afile, "is a file, not a folder")]:
            path.fill(typed)
            dialog.get_by_role("button", name="Start here").click()
            expect(dialog.locator(".problem")).to_contain_text(said, timeout=WAIT)
            expect(dialog).to_be_visible()
        path.fill(other + "/")
        dialog.get_by_role("button", name="Start here").click()
        expect(dialog).to_be_hidden()
        expect(page.locator("#welcome")).to_contain_text(other)
        expect(page.locator("#prompt")).to_be_focused()
        self.assertEqual([s["id"] for s in served.sessions()], [first])
        # The first message starts it there; its entry and heading follow the turn.
        self.send(page, "the second task")
        expect(page.locator("#transcript")).to_contain_text("second done", timeout=WAIT)
        self.assertEqual(len(served.sessions()), 2)
        group = page.locator("#sessions h2", has_text="other")
        expect(group).to_be_visible()
        expect(page.locator("#sessions a.open")).to_contain_text("the second task", timeout=WAIT)
        expect(page.locator("#session-where")).to_have_text(other)
        # A click on an entry opens it, wherever its tools show on hover.
        entry = page.locator("#sessions a", has_text="the first task")
        entry.hover()
        entry.click(timeout=WAIT)
        expect(page.locator("#session-title")).to_have_attribute("data-session", first, timeout=WAIT)

        # A fresh page shows the launch folder's recent sessions; one opens with a click.
        fresh = context.new_page()
        self.new_session(fresh, served)
        recent = fresh.locator("#welcome .recent")
        expect(recent).to_have_count(1)
        expect(recent).to_contain_text("the first task")
        recent.click()
        expect(fresh.locator("#transcript")).to_contain_text("first done", timeout=WAIT)
        self.assertEqual(self.started(fresh), first)

    def test_light_and_dark_themes(self):
        served, context = self.serve([{"text": "unused"}])
        page = context.new_page()
        self.new_session(page, served)
        background = "() => getComputedStyle(document.body).backgroundColor"
        dark = re.compile(r"rgb\((\d{1,2}), (\d{1,2}), (\d{1,2})\)")
        system = page.evaluate(background)
        # The picker keeps its width beside Notify me and Shortcuts (it was once squeezed to
        # its arrow).
        self.assertGreater(page.locator("#theme").bounding_box()["width"], 60)
        page.select_option("#theme", "dark")
        self.assertRegex(page.evaluate(background), dark)
        page.reload()
        expect(page.locator("#theme")).to_have_value("dark", timeout=WAIT)
        self.assertRegex(page.evaluate(background), dark)
        page.select_option("#theme", "light")
        self.assertNotRegex(page.evaluate(background), dark)
        page.select_option("#theme", "system")
        self.assertEqual(page.evaluate(background), system)
        if self.engine == "chromium":
            # Following the system: a dark one gives the dark theme.
            page.emulate_media(color_scheme="dark")
            self.assertRegex(page.evaluate(background), dark)

    def test_the_keyboard_alone(self):
        served, context = self.serve([{"text": "hello back"}])
        page = context.new_page()
        self.new_session(page, served)
        page.locator("body").click(position={"x": 600, "y": 300})
        page.keyboard.press("?")
        shortcuts = page.locator("dialog#shortcuts-dialog")
        expect(shortcuts).to_be_visible()
        expect(shortcuts.get_by_role("row", name="n new session", exact=True)).to_contain_text("new session")
        expect(shortcuts.get_by_role("button", name="Close")).to_be_focused()
        page.keyboard.press("Escape")
        expect(shortcuts).to_be_hidden()
        page.keyboard.press("/")
        expect(page.locator("#prompt")).to_be_focused()
        expect(page.locator("#prompt")).to_have_value("")
        # Typed in the message box, a shortcut's key is only text.
        page.keyboard.type("n?")
        expect(page.locator("#prompt")).to_have_value("n?")
        expect(shortcuts).to_be_hidden()
        page.keyboard.press("Enter")
        expect(page.locator("#transcript")).to_contain_text("hello back", timeout=WAIT)
        # The focus moves through the controls with Tab, each shown with a ring.
        page.keyboard.press("Shift+Tab")
        focused = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
        self.assertEqual(focused, "solid")
        page.keyboard.press("n")
        expect(page.locator("dialog#new-dialog")).to_be_visible()


@unittest.skipIf(REASON, REASON or "")
class InChromium(LayoutTests, unittest.TestCase):
    engine = "chromium"

    @classmethod
    def launch(cls, playwright):
        return chromium(playwright)


@unittest.skipIf(REASON, REASON or "")
class InFirefox(LayoutTests, unittest.TestCase):
    engine = "firefox"

    @classmethod
    def launch(cls, playwright):
        return firefox(playwright)


if __name__ == "__main__":
    unittest.main()

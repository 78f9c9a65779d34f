"""dsh web's accessibility, in Chromium and Firefox as test_page.py runs them: axe-core finds no
serious or critical violation (WCAG 2.1 A and AA) on each main view, light and dark.

axe-core comes from npm (version AXE_VERSION), installed once into a folder beside the build
(.ci/run does it; by hand: npm install --prefix target/web-test-deps axe-core@AXE_VERSION) and
read from there: nothing is fetched while the tests run. DSH_AXE_JS names the file when it is
elsewhere. Missing, the test fails under DSH_TEST_REQUIRE_BROWSER=1 (CI) and is skipped
otherwise.
"""
import json
import os
import unittest

from test_page import REASON, WAIT, Browser, chromium, escalate, expect, firefox

AXE_VERSION = "4.14.1"
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(HERE, "..", "..", "..", "..", "target")
AXE_JS = os.environ.get("DSH_AXE_JS") or os.path.join(
    TARGET, "web-test-deps", "node_modules", "axe-core", "axe.min.js")


def axe_missing():
    package = os.path.join(os.path.dirname(AXE_JS), "package.json")
    if not os.path.exists(AXE_JS) or not os.path.exists(package):
        return f"axe-core is not installed at {AXE_JS}"
    with open(package, encoding="utf-8") as f:
        found = json.load(f).get("version")
    if found != AXE_VERSION:
        return f"axe-core {found} is at {AXE_JS}; the tests want {AXE_VERSION}"
    return None


AXE_REASON = REASON or axe_missing()
if AXE_REASON and os.environ.get("DSH_TEST_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"the accessibility tests must run here: {AXE_REASON} (.ci/run installs it)")


class AccessTests(Browser):
    def check(self, page, view):
        """axe-core over the page as it is, light and dark: no serious or critical violation."""
        if not page.evaluate("() => typeof axe !== 'undefined'"):
            with open(AXE_JS, encoding="utf-8") as f:
                # Evaluated by the browser's driver, not loaded by the page (whose policy
                # allows no script but its own).
                page.evaluate(f.read() + "\n;0")
        for theme in ["light", "dark"]:
            page.evaluate("theme => applyTheme(theme)", theme)
            found = page.evaluate("""async () => {
                const result = await axe.run(document, { runOnly: { type: "tag",
                    values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] }, resultTypes: ["violations"] });
                return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
                    .map((v) => `${v.id} (${v.impact}): ${v.help}; ` +
                        v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
            }""")
            self.assertEqual(found, [], f"{view}, {theme}")
        page.evaluate("() => applyTheme(localStorage.getItem('dsh-theme'))")

    def test_the_main_views_have_no_serious_violation(self):
        served, context = self.serve([
            {"calls": [["todo_write", {"todos": [
                {"content": "write the notes", "status": "in_progress"},
                {"content": "check them", "status": "pending"}]}]]},
            {"calls": [["bash", {"command": "echo hello", "description": "greet"}]]},
            {"calls": [["write", {"file_path": "notes.txt", "content": "first\nsecond\n"}]]},
            {"reasoning": "done now", "text": "Wrote **notes.txt**:\n\n```rust\nfn main() {}\n```"},
            escalate("echo allowed-run"), {"text": "ran it"},
            {"calls": [["exit_plan_mode", {"plan": "# The plan\n\n1. Edit **main.rs**"}]]},
            {"text": "planned"},
        ])
        page = context.new_page()
        self.new_session(page, served)
        self.check(page, "the first screen")
        page.click("#new-session")
        expect(page.locator("dialog#new-dialog")).to_be_visible()
        self.check(page, "new session")
        page.keyboard.press("Escape")

        self.send(page, "write notes")
        expect(page.locator("#transcript")).to_contain_text("Wrote", timeout=WAIT)
        page.locator("details.call").nth(1).locator("summary").click()
        self.check(page, "a conversation with calls and a diff")

        self.send(page, "run it")
        expect(page.locator("dialog#ask")).to_contain_text("needs the whole machine", timeout=WAIT)
        self.check(page, "an approval")
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        expect(page.locator("#transcript")).to_contain_text("ran it", timeout=WAIT)

        # The session's own dialogs: Rename and Delete.
        entry = page.locator("#sessions .session").first
        entry.hover()
        entry.get_by_role("button", name="Rename").click()
        expect(page.get_by_role("dialog", name="Rename the session")).to_be_visible()
        self.check(page, "the rename dialog")
        page.keyboard.press("Escape")
        entry.hover()
        entry.get_by_role("button", name="Delete").click()
        expect(page.get_by_role("dialog", name="Delete the session?")).to_be_visible()
        self.check(page, "the delete dialog")
        page.keyboard.press("Escape")
        # Who wrote a line of the diff.
        page.locator("details.call .diff button.blame").first.click()
        expect(page.locator("dialog#blame-dialog")).to_contain_text("Written in turn 1", timeout=WAIT)
        self.check(page, "a line's blame")
        page.keyboard.press("Escape")

        page.click("#rewind")
        expect(page.locator("dialog#rewind-dialog")).to_contain_text("Turn 1", timeout=WAIT)
        self.check(page, "the rewind")
        page.locator("dialog#rewind-dialog").get_by_role("button", name="Cancel").click()

        page.select_option("#mode", "plan")
        expect(page.locator("#mode")).to_be_enabled(timeout=WAIT)
        self.send(page, "plan it")
        expect(page.locator("dialog#ask")).to_contain_text("Carry out this plan?", timeout=WAIT)
        self.check(page, "a plan's review")


@unittest.skipIf(AXE_REASON, AXE_REASON or "")
class InChromium(AccessTests, unittest.TestCase):
    engine = "chromium"

    @classmethod
    def launch(cls, playwright):
        return chromium(playwright)


@unittest.skipIf(AXE_REASON, AXE_REASON or "")
class InFirefox(AccessTests, unittest.TestCase):
    engine = "firefox"

    @classmethod
    def launch(cls, playwright):
        return firefox(playwright)


if __name__ == "__main__":
    unittest.main()

//! The message being typed: several lines, a cursor, and the history of what was sent
//! (Up on the first line and Down on the last walk it).

use unicode_width::UnicodeWidthChar;

/// An editable text with a cursor, and the messages sent before.
#[derive(Debug, Default)]
pub struct Composer {
    text: Vec<char>,
    /// A position in `text`, 0..=len.
    cursor: usize,
    history: Vec<String>,
    /// While walking the history: the entry shown, and the draft it replaced.
    browsing: Option<(usize, String)>,
}

impl Composer {
    pub fn text(&self) -> String {
        self.text.iter().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    #[cfg(test)]
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text, the cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.chars().collect();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Empties the composer and returns what it held, remembered in the history.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Earlier messages, oldest first (a resumed session's are loaded).
    pub fn remember(&mut self, text: String) {
        self.history.push(text);
    }

    pub fn insert(&mut self, text: &str) {
        // A paste from Windows or an old Mac keeps its line breaks.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            self.text.insert(self.cursor, c);
            self.cursor += 1;
        }
        self.browsing = None;
    }

    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            self.cursor -= 1;
            self.text.remove(self.cursor);
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Ctrl-W: the word before the cursor.
    pub fn delete_word(&mut self) {
        let mut start = self.cursor;
        while start > 0 && self.text[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !self.text[start - 1].is_whitespace() {
            start -= 1;
        }
        self.text.drain(start..self.cursor);
        self.cursor = start;
    }

    /// Ctrl-U: the line before the cursor.
    pub fn delete_to_line_start(&mut self) {
        let start = self.line_start(self.cursor);
        self.text.drain(start..self.cursor);
        self.cursor = start;
    }

    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.text.len());
    }

    pub fn home(&mut self) {
        self.cursor = self.line_start(self.cursor);
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end(self.cursor);
    }

    fn line_start(&self, at: usize) -> usize {
        (0..at)
            .rev()
            .find(|&i| self.text[i] == '\n')
            .map_or(0, |i| i + 1)
    }

    fn line_end(&self, at: usize) -> usize {
        (at..self.text.len())
            .find(|&i| self.text[i] == '\n')
            .unwrap_or(self.text.len())
    }

    /// Up: the line above, or on the first line the previous message sent.
    pub fn up(&mut self) {
        let start = self.line_start(self.cursor);
        if start == 0 {
            self.history_back();
            return;
        }
        let column = self.cursor - start;
        let above = self.line_start(start - 1);
        self.cursor = (above + column).min(start - 1);
    }

    /// Down: the line below, or on the last line the next message in the history.
    pub fn down(&mut self) {
        let end = self.line_end(self.cursor);
        if end == self.text.len() {
            self.history_forward();
            return;
        }
        let column = self.cursor - self.line_start(self.cursor);
        let below_end = self.line_end(end + 1);
        self.cursor = (end + 1 + column).min(below_end);
    }

    fn history_back(&mut self) {
        let index = match &self.browsing {
            Some((0, _)) => return,
            Some((i, _)) => i - 1,
            None if self.history.is_empty() => return,
            None => self.history.len() - 1,
        };
        let draft = match self.browsing.take() {
            Some((_, draft)) => draft,
            None => self.text(),
        };
        self.text = self.history[index].chars().collect();
        self.cursor = self.text.len();
        self.browsing = Some((index, draft));
    }

    fn history_forward(&mut self) {
        let Some((index, draft)) = self.browsing.take() else {
            return;
        };
        let shown = if index + 1 < self.history.len() {
            self.browsing = Some((index + 1, draft));
            self.history[index + 1].clone()
        } else {
            draft
        };
        self.text = shown.chars().collect();
        self.cursor = self.text.len();
    }

    /// The `@word` the cursor is in, if any: where it starts (at the `@`) and its text.
    pub fn mention(&self) -> Option<(usize, String)> {
        let mut start = self.cursor;
        while start > 0 && !self.text[start - 1].is_whitespace() {
            start -= 1;
        }
        (start < self.cursor && self.text[start] == '@')
            .then(|| (start, self.text[start + 1..self.cursor].iter().collect()))
    }

    /// Replaces the `@word` starting at `start` with `@replacement `.
    pub fn complete_mention(&mut self, start: usize, replacement: &str) {
        let mut end = self.cursor;
        while end < self.text.len() && !self.text[end].is_whitespace() {
            end += 1;
        }
        let inserted: Vec<char> = format!("@{replacement} ").chars().collect();
        let len = inserted.len();
        self.text.splice(start..end, inserted);
        self.cursor = start + len;
    }

    /// The text as rows of at most `width` columns, and the cursor's (column, row).
    pub fn layout(&self, width: u16) -> (Vec<String>, (u16, u16)) {
        let width = usize::from(width.max(2));
        let mut rows = vec![String::new()];
        let mut used = 0;
        let mut cursor = (0, 0);
        for (i, c) in self.text.iter().enumerate() {
            if i == self.cursor {
                cursor = (used, rows.len() - 1);
            }
            if *c == '\n' {
                rows.push(String::new());
                used = 0;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if used + w > width {
                rows.push(String::new());
                used = 0;
            }
            if let Some(row) = rows.last_mut() {
                row.push(*c);
            }
            used += w;
        }
        if self.cursor == self.text.len() {
            if used >= width {
                rows.push(String::new());
                used = 0;
            }
            cursor = (used, rows.len() - 1);
        }
        let clamp = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        (rows, (clamp(cursor.0), clamp(cursor.1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_and_lines() {
        let mut c = Composer::default();
        c.insert("hello world");
        c.delete_word();
        assert_eq!(c.text(), "hello ");
        c.insert("there\nsecond");
        c.up();
        assert_eq!(c.cursor(), 6, "same column on the line above, clamped");
        c.end();
        c.insert("!");
        assert_eq!(c.text(), "hello there!\nsecond");
        c.down();
        c.home();
        c.delete_to_line_start();
        c.end();
        c.delete_to_line_start();
        assert_eq!(c.text(), "hello there!\n");
        c.insert("a\r\nb");
        assert_eq!(c.text(), "hello there!\na\nb");
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut c = Composer::default();
        c.insert("first");
        assert_eq!(c.take(), "first");
        c.insert("second");
        c.take();
        c.insert("draft");
        c.up();
        assert_eq!(c.text(), "second");
        c.up();
        assert_eq!(c.text(), "first");
        c.up();
        assert_eq!(c.text(), "first");
        c.down();
        c.down();
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn mentions_are_found_and_completed() {
        let mut c = Composer::default();
        c.insert("look at @src/ma");
        assert_eq!(c.mention(), Some((8, "src/ma".into())));
        c.complete_mention(8, "src/main.rs");
        assert_eq!(c.text(), "look at @src/main.rs ");
        assert_eq!(c.mention(), None);
        // The cursor just before an `@` is not in a mention.
        c.set_text("@x");
        c.home();
        assert_eq!(c.mention(), None);
        c.right();
        assert_eq!(c.mention(), Some((0, String::new())));
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let mut c = Composer::default();
        c.insert("abcdef\ngh");
        let (rows, cursor) = c.layout(4);
        assert_eq!(rows, ["abcd", "ef", "gh"]);
        assert_eq!(cursor, (2, 2));
        c.set_text("abcd");
        assert_eq!(
            c.layout(4).1,
            (0, 1),
            "a full row puts the cursor on the next"
        );
    }
}

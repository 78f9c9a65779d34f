//! The model's answers are markdown: rendered here to styled lines (headings, emphasis, lists,
//! quotes, links, tables, code blocks with syntax colours).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::highlight_line;

/// `text` rendered; blocks are separated by one blank line.
pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut r = Renderer::default();
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

#[derive(Default)]
struct Renderer {
    lines: Vec<Line<'static>>,
    /// The line being built.
    current: Vec<Span<'static>>,
    /// Inline styles open (emphasis, strong, links...), innermost last.
    styles: Vec<Style>,
    /// Open lists: the next number of an ordered one, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// The prefix every line of the current item and quote starts with.
    quote_depth: usize,
    /// Inside a fenced or indented code block: its info string.
    code: Option<String>,
    /// Where a link points, shown after its text.
    link: Option<String>,
    /// A list item's marker waits for its first text.
    pending_marker: Option<String>,
    /// Cells of the table row being built.
    row: Vec<String>,
    cell: String,
    in_table: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn indent(&self) -> String {
        let mut prefix = "> ".repeat(self.quote_depth);
        prefix.push_str(&"  ".repeat(self.lists.len().saturating_sub(1)));
        prefix
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if self.in_table {
            self.cell.push_str(text);
            return;
        }
        if self.current.is_empty() {
            let mut prefix = self.indent();
            if let Some(marker) = self.pending_marker.take() {
                prefix.push_str(&marker);
            } else if !self.lists.is_empty() {
                prefix.push_str("  ");
            }
            if !prefix.is_empty() {
                self.current
                    .push(Span::styled(prefix, Style::new().fg(Color::DarkGray)));
            }
        }
        self.current.push(Span::styled(text.to_owned(), style));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    /// Ends a block: its line, then a blank one unless inside a list.
    fn end_block(&mut self) {
        self.flush();
        if self.lists.is_empty() && self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &self.code {
                Some(info) => {
                    let info = info.clone();
                    for line in text.lines() {
                        let mut spans = vec![Span::styled(
                            format!("{}│ ", self.indent()),
                            Style::new().fg(Color::DarkGray),
                        )];
                        spans.extend(highlight_line(&info, line));
                        self.lines.push(Line::from(spans));
                    }
                }
                None => {
                    let style = self.style();
                    self.push_text(&text, style);
                }
            },
            Event::Code(code) => {
                let style = self.style().fg(Color::Yellow);
                self.push_text(&code, style);
            }
            Event::SoftBreak => {
                let style = self.style();
                self.push_text(" ", style);
            }
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.lines.push(Line::styled(
                    "─".repeat(40),
                    Style::new().fg(Color::DarkGray),
                ));
                self.lines.push(Line::default());
            }
            Event::TaskListMarker(done) => {
                let style = self.style();
                self.push_text(if done { "[x] " } else { "[ ] " }, style);
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                self.push_text(html.trim_end_matches('\n'), style);
            }
            Event::FootnoteReference(_) | Event::InlineMath(_) | Event::DisplayMath(_) => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.flush();
                let colour = match level {
                    HeadingLevel::H1 => Color::Cyan,
                    HeadingLevel::H2 => Color::LightBlue,
                    _ => Color::Blue,
                };
                self.styles
                    .push(Style::new().fg(colour).add_modifier(Modifier::BOLD));
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote_depth += 1;
                self.styles
                    .push(Style::new().add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.code = Some(match kind {
                    CodeBlockKind::Fenced(info) => info.into_string(),
                    CodeBlockKind::Indented => String::new(),
                });
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_owned(),
                };
                self.pending_marker = Some(marker);
            }
            Tag::Emphasis => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.into_string());
                self.styles.push(
                    Style::new()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
            }
            Tag::Table(_) => {
                self.flush();
                self.in_table = true;
            }
            Tag::TableHead | Tag::TableRow => self.row.clear(),
            Tag::TableCell => self.cell.clear(),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.end_block();
            }
            TagEnd::Paragraph => self.end_block(),
            TagEnd::BlockQuote(_) => {
                self.styles.pop();
                self.flush();
                self.quote_depth -= 1;
                if self.quote_depth == 0 {
                    self.end_block();
                }
            }
            TagEnd::CodeBlock => {
                self.code = None;
                self.end_block();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.end_block();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.push_text(&format!(" ({url})"), Style::new().fg(Color::DarkGray));
                }
            }
            TagEnd::TableCell => self.row.push(std::mem::take(&mut self.cell)),
            TagEnd::TableHead => {
                let row = self.row.join(" │ ");
                let rule = "─".repeat(row.chars().count());
                self.lines
                    .push(Line::styled(row, Style::new().add_modifier(Modifier::BOLD)));
                self.lines
                    .push(Line::styled(rule, Style::new().fg(Color::DarkGray)));
            }
            TagEnd::TableRow => self.lines.push(Line::from(self.row.join(" │ "))),
            TagEnd::Table => {
                self.in_table = false;
                self.end_block();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::plain;

    #[test]
    fn blocks_lists_and_code() {
        let text = "# Plan\n\nSome *text* with `code` and a [link](https://x.dev).\n\n\
                    1. first\n2. second\n   - nested\n\n```rust\nfn main() {}\n```\n\n> quoted\n";
        insta::assert_snapshot!(plain(&render(text)), @r"
        Plan

        Some text with code and a link (https://x.dev).

        1. first
        2. second
          • nested

        │ fn main() {}

        > quoted
        ");
    }

    #[test]
    fn styles_are_applied() {
        let lines = render("**bold** `tick`");
        let bold = &lines[0].spans[0];
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        assert_eq!(lines[0].spans[2].style.fg, Some(Color::Yellow));
    }

    #[test]
    fn tables_are_aligned_rows() {
        let lines = render("| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(plain(&lines), "a │ b\n─────\n1 │ 2");
    }
}

//! A session as a document to read or hand on (`dsh sessions export ID --format markdown|html`,
//! the terminal UI's `/export`): its messages, answers, calls with the changes they asked for,
//! results and cards, from the records' views as every front end shows them, with the run's
//! secrets taken out of the whole. The HTML is one self-contained page: its style inline,
//! nothing fetched.

use std::fmt::Write as _;
use std::path::Path;

use dsh_protocol::view::reason_kind;
use dsh_protocol::{Block, Message, RecordEnvelope, SessionHeader, ToolOutputPart, View};

use crate::{CoreError, ToolCatalog};

/// The lines of a result an export keeps, the rest counted (the log has it all).
const RESULT_LINES: usize = 40;
/// The lines of a change shown as a diff.
const CHANGE_LINES: usize = 80;

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Markdown,
    Html,
}

impl ExportFormat {
    /// The file name extension: `md` or `html`.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "md",
            ExportFormat::Html => "html",
        }
    }
}

/// A format name that is neither `markdown` nor `html`.
#[derive(Debug, thiserror::Error)]
#[error("unknown export format \"{0}\": --format takes markdown (or md) or html")]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for ExportFormat {
    type Err = UnknownFormat;

    fn from_str(name: &str) -> Result<Self, UnknownFormat> {
        match name {
            "markdown" | "md" => Ok(ExportFormat::Markdown),
            "html" => Ok(ExportFormat::Html),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

/// One piece of an exported transcript.
enum Piece {
    Heading(String),
    /// Who speaks, then what they said as markdown.
    Said(&'static str, String),
    /// A line about a call, a card or a turn's end.
    Line(String),
    /// A block kept as it is: a diff, a command's output.
    Code(&'static str, String),
}

/// Session `id` of the folder `cwd` under `home`, exported as `format`: `catalog` describes its
/// calls (the run's tools, or the built-in ones), `redactor` takes out the secrets it knows.
pub fn export_session(
    home: &Path,
    cwd: &Path,
    id: &str,
    format: ExportFormat,
    catalog: &ToolCatalog,
    redactor: Option<&dsh_tools::Redactor>,
) -> Result<String, CoreError> {
    let log = crate::read_log(&crate::session_log_path(home, cwd, id)?)?;
    let title = crate::list_sessions(home, cwd)
        .into_iter()
        .find(|s| s.id == id)
        .map_or_else(|| id.to_owned(), |s| s.name().to_owned());
    let pieces = pieces(&log.records, catalog);
    let text = match format {
        ExportFormat::Markdown => markdown(&title, &log.header, &pieces),
        ExportFormat::Html => html(&title, &log.header, &pieces),
    };
    Ok(dsh_tools::redacted(redactor, text))
}

/// The built-in tools of a run with `settings`, for describing calls where no run is open.
pub fn builtin_catalog(settings: &crate::Settings) -> ToolCatalog {
    crate::builtins::base_tools(settings).tools.catalog()
}

fn pieces(records: &[RecordEnvelope], catalog: &ToolCatalog) -> Vec<Piece> {
    let mut out = Vec::new();
    for envelope in records {
        match envelope.record.view() {
            View::TurnStart { turn } => out.push(Piece::Heading(format!("Turn {turn}"))),
            View::User { message } => match crate::user_shell::read(&message.text()) {
                Some((command, output)) => {
                    out.push(Piece::Line(format!("**You ran** `{command}`")));
                    out.push(Piece::Code("text", output.to_owned()));
                }
                None => out.push(Piece::Said("You", text_of(message))),
            },
            View::Answer(answer) => {
                let text = answer.message.text();
                if !text.trim().is_empty() {
                    out.push(Piece::Said("dsh", text));
                }
            }
            View::Call(call) => {
                let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                let view = catalog.describe(&call.name, &args);
                out.push(Piece::Line(format!("**{}** `{}`", call.name, view.summary)));
                if let Some(change) = &view.change {
                    let shown = change.lines(CHANGE_LINES);
                    let mut diff: String = (shown.lines.iter())
                        .map(|(sign, line)| format!("{}{line}\n", sign.mark()))
                        .collect();
                    if shown.more > 0 {
                        let _ = writeln!(diff, "… {} more lines", shown.more);
                    }
                    out.push(Piece::Code("diff", diff));
                }
            }
            View::Result(result) => {
                let (text, failed) = result_text(&result.message);
                let mark = if failed { "result (error)" } else { "result" };
                out.push(Piece::Line(format!("*{mark}*")));
                out.push(Piece::Code("text", text));
            }
            View::TurnEnd { reason, .. } => {
                out.push(Piece::Line(format!(
                    "*turn ended: {}*",
                    reason_kind(reason)
                )));
            }
            View::Todos { todos } => {
                let list = (todos.iter())
                    .map(|t| format!("- [{}] {}", t.status.as_str(), t.content))
                    .collect::<Vec<_>>()
                    .join("\n");
                out.push(Piece::Said("Todo", list));
            }
            View::Card(card) if !card.routine => {
                out.push(Piece::Line(card.line()));
                if let Some(detail) = card.detail {
                    out.push(Piece::Said("", detail.to_owned()));
                }
            }
            _ => {}
        }
    }
    out
}

/// A message's text, its images named.
fn text_of(message: &Message) -> String {
    let mut text = message.text();
    for block in &message.content {
        if let Block::Image { image } = block {
            let _ = write!(text, "\n{}", image.summary());
        }
    }
    text
}

/// A result's text (its first lines, the rest counted) and whether it failed.
fn result_text(message: &Message) -> (String, bool) {
    let mut text = String::new();
    let mut failed = false;
    for block in &message.content {
        if let Block::ToolResult {
            content, is_error, ..
        } = block
        {
            failed |= *is_error;
            for part in content {
                match part {
                    ToolOutputPart::Text { text: t } => text.push_str(t),
                    ToolOutputPart::Image { image } => text.push_str(&image.summary()),
                }
            }
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = lines[..lines.len().min(RESULT_LINES)].join("\n");
    if lines.len() > RESULT_LINES {
        let _ = write!(shown, "\n… {} more lines", lines.len() - RESULT_LINES);
    }
    (shown, failed)
}

fn about(header: &SessionHeader) -> String {
    format!(
        "session {} · {} · created {} UTC · dsh {}",
        header.id,
        header.cwd,
        crate::utc_date_time(header.created_at),
        header.dsh
    )
}

fn markdown(title: &str, header: &SessionHeader, pieces: &[Piece]) -> String {
    let mut out = format!("# {title}\n\n*{}*\n", about(header));
    for piece in pieces {
        match piece {
            Piece::Heading(text) => _ = write!(out, "\n## {text}\n"),
            Piece::Said("", text) => _ = write!(out, "\n{text}\n"),
            Piece::Said(who, text) => _ = write!(out, "\n**{who}:**\n\n{text}\n"),
            Piece::Line(text) => _ = write!(out, "\n{text}\n"),
            Piece::Code(lang, text) => {
                // A fence longer than any run of backticks inside.
                let fence = "`".repeat(longest_backticks(text).max(2) + 1);
                let text = text.trim_end_matches('\n');
                _ = write!(out, "\n{fence}{lang}\n{text}\n{fence}\n");
            }
        }
    }
    out
}

fn longest_backticks(text: &str) -> usize {
    (text.split(|c| c != '`')).map(str::len).max().unwrap_or(0)
}

/// The page's style: readable in a light or a dark scheme, nothing loaded from elsewhere.
const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;\
padding:0 1rem;color:#1d1d1f;background:#fff}h2{border-top:1px solid #ccc;padding-top:1rem}\
.who{font-weight:600}.said{white-space:pre-wrap}pre{background:#f4f4f6;padding:.6rem;\
overflow-x:auto;border-radius:4px}.diff .add{color:#0a6b25}.diff .del{color:#a4161a}\
.about{color:#555}@media(prefers-color-scheme:dark){body{background:#161618;color:#e8e8ea}\
pre{background:#26262a}.about{color:#aaa}.diff .add{color:#6fdc8c}.diff .del{color:#ff8a8a}}";

fn html(title: &str, header: &SessionHeader, pieces: &[Piece]) -> String {
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n\
         <p class=\"about\">{}</p>\n",
        escape_html(title),
        escape_html(title),
        escape_html(&about(header))
    );
    for piece in pieces {
        match piece {
            Piece::Heading(text) => _ = writeln!(out, "<h2>{}</h2>", escape_html(text)),
            Piece::Said(who, text) => {
                if !who.is_empty() {
                    _ = writeln!(out, "<p class=\"who\">{}</p>", escape_html(who));
                }
                _ = writeln!(out, "<div class=\"said\">{}</div>", escape_html(text));
            }
            Piece::Line(text) => {
                _ = writeln!(out, "<p>{}</p>", escape_html(&text.replace(['*', '`'], "")));
            }
            Piece::Code("diff", text) => {
                let lines: String = (text.lines())
                    .map(|l| match l.chars().next() {
                        Some('+') => format!("<span class=\"add\">{}</span>\n", escape_html(l)),
                        Some('-') => format!("<span class=\"del\">{}</span>\n", escape_html(l)),
                        _ => format!("{}\n", escape_html(l)),
                    })
                    .collect();
                _ = writeln!(out, "<pre class=\"diff\">{lines}</pre>");
            }
            Piece::Code(_, text) => _ = writeln!(out, "<pre>{}</pre>", escape_html(text)),
        }
    }
    out.push_str("</body></html>\n");
    out
}

/// `text` as HTML text or an attribute's value (quoted either way): what the HTML export and
/// the web app's page write.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

impl crate::Run {
    /// The open session exported as `format`, its calls described with the run's tools and
    /// the run's secrets taken out (the terminal UI's `/export`).
    pub fn export(&self, format: ExportFormat) -> Result<String, CoreError> {
        let session = self.agent.session();
        export_session(
            &self.settings.home().value,
            self.settings.cwd(),
            session.id(),
            format,
            &self.catalog,
            self.settings.redactor().as_ref(),
        )
    }
}

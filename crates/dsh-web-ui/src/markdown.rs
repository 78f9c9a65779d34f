//! The model's answers as HTML, rendered here rather than in the page: CommonMark with tables,
//! strikethrough and task lists, through pulldown-cmark. Raw HTML in an answer is shown as text,
//! never passed through, and link targets other than http(s) and mailto are dropped, so an
//! answer cannot run script in the page. Code blocks carry `language-<info>` for the eye.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// `markdown` as HTML that is safe to insert into the page.
pub(crate) fn to_html(markdown: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        // Raw HTML, block or inline, is text here.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_target(link_type, dest_url),
            title,
            id,
        }),
        // Images of every kind of link (inline, reference, shortcut).
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_target(link_type, dest_url),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, highlighted(events).into_iter());
    out
}

/// `events` with each fenced code block of a language the lexer knows turned into its lines
/// of marked pieces (`<span class="tok-keyword">`), every piece escaped.
fn highlighted<'a>(events: impl Iterator<Item = Event<'a>>) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    let mut block: Option<(String, String)> = None;
    for event in events {
        match (&mut block, event) {
            (None, Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))) => {
                block = Some((info.to_string(), String::new()));
            }
            (Some((_, code)), Event::Text(text)) => code.push_str(&text),
            (Some(_), Event::End(TagEnd::CodeBlock)) => {
                if let Some((info, code)) = block.take() {
                    out.push(Event::Html(CowStr::from(code_html(&info, &code))));
                }
            }
            (_, other) => out.push(other),
        }
    }
    out
}

fn code_html(info: &str, code: &str) -> String {
    let language = info.split([' ', ',', '{']).next().unwrap_or("");
    let mut html = if language.is_empty() {
        "<pre><code>".to_owned()
    } else {
        format!("<pre><code class=\"language-{}\">", escape(language))
    };
    for line in code.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        for (kind, piece) in dsh_highlight::tokens(info, body) {
            match kind {
                dsh_highlight::Token::Plain => html.push_str(&escape(&piece)),
                kind => {
                    html.push_str(&format!(
                        "<span class=\"tok-{}\">{}</span>",
                        kind.name(),
                        escape(&piece)
                    ));
                }
            }
        }
        html.push_str(end);
    }
    html.push_str("</code></pre>\n");
    html
}

// The escaper the HTML export uses: the page and the export escape alike.
pub(crate) use dsh_core::export::escape_html as escape;

/// A link's target when it is http(s), mailto or a fragment; else nothing (`javascript:` and
/// the like go nowhere). An e-mail autolink's target is the bare address (the renderer adds
/// `mailto:`), so it is kept when it is one.
fn safe_target(kind: LinkType, target: CowStr<'_>) -> CowStr<'_> {
    let lower = target.trim_start().to_ascii_lowercase();
    let safe = match kind {
        LinkType::Email => !lower.contains(':'),
        _ => ["http://", "https://", "mailto:", "#"]
            .iter()
            .any(|prefix| lower.starts_with(prefix)),
    };
    if safe { target } else { CowStr::Borrowed("") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_rendered_and_nothing_in_it_runs() {
        assert_eq!(to_html("a **b**"), "<p>a <strong>b</strong></p>\n");
        assert_eq!(
            to_html("```rust\nfn x() {}\n```"),
            "<pre><code class=\"language-rust\"><span class=\"tok-keyword\">fn</span> x() {}\n</code></pre>\n"
        );
        // What is inside a block is escaped, piece by piece.
        let code = to_html("```js\nlet a = \"<script>\";\n```");
        assert!(
            code.contains("<span class=\"tok-string\">&quot;&lt;script&gt;&quot;</span>"),
            "{code}"
        );
        let odd = to_html("```\\\"><img src=x>\ntext\n```");
        assert!(!odd.contains("<img"), "{odd}");
        let hostile = to_html(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)> [x](javascript:alert(1)) \
             ![i][r]\n\n[r]: javascript:alert(2)",
        );
        assert!(!hostile.contains("<script"), "{hostile}");
        assert!(!hostile.contains("<img src=x"), "{hostile}");
        assert!(!hostile.contains("javascript:"), "{hostile}");
        assert!(hostile.contains("&lt;script&gt;"), "{hostile}");
        let mail = to_html("<dsh@example.com>");
        assert!(mail.contains("href=\"mailto:dsh@example.com\""), "{mail}");
    }
}

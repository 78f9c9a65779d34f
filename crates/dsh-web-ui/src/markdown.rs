//! The model's answers as HTML, rendered here rather than in the page: CommonMark with tables,
//! strikethrough and task lists, through pulldown-cmark. Raw HTML in an answer is shown as text,
//! never passed through, and link targets other than http(s) and mailto are dropped, so an
//! answer cannot run script in the page. Code blocks carry `language-<info>` for the eye.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, html};

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
    html::push_html(&mut out, events);
    out
}

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
            "<pre><code class=\"language-rust\">fn x() {}\n</code></pre>\n"
        );
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

//! `web_fetch`: one http(s) URL, given to the model as markdown or text.

use std::sync::Arc;
use std::time::Duration;

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolError, ToolFacts, ToolFuture,
    ToolKind, ToolOutput,
};
use futures_util::StreamExt;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};

use crate::access::{WebSettings, network_allowed, web_error};

/// The longest URL taken.
const MAX_URL_LENGTH: usize = 2048;
/// Redirects followed, each checked as the first request is.
const MAX_REDIRECTS: usize = 5;
/// Bytes of a response read; a longer body is cut.
const MAX_RESPONSE_BYTES: usize = 5_000_000;
/// Characters of the decoded body converted.
const MAX_BODY_CHARS: usize = 100_000;
/// Characters and lines of the whole result.
const MAX_OUTPUT_CHARS: usize = 200_000;
const MAX_OUTPUT_LINES: usize = 5_000;
/// Said after a result that was cut, as the reference says it.
const FOOTER: &str =
    "\n\n(Content truncated. Fetch a more specific URL or section for the full text.)";
/// How long connecting may take, within the whole fetch's limit.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `web_fetch` tool.
pub struct WebFetch {
    parameters: Parameters,
    settings: Arc<WebSettings>,
}

impl WebFetch {
    pub(crate) fn new(settings: Arc<WebSettings>) -> Self {
        WebFetch {
            parameters: Parameters::new(vec![Param::required(
                "url",
                ParamType::String,
                "The http:// or https:// address to read.",
            )]),
            settings,
        }
    }
}

impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Fetch, "Fetch")
            .subject("url")
            .hook_names(&["WebFetch"])
            .read_only()
    }

    fn description(&self) -> &str {
        "Read one web page (http or https) and get its content as markdown, or as text for \
         plain-text and JSON responses."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "`web_fetch` reads a page you have the address of (from the task, the code, or \
             web_search); cite the URL as a markdown link when you use what it says. Long pages \
             are cut: fetch a more specific page or section for the rest.",
        )
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args.str("url").unwrap_or_default();
            if raw.trim().is_empty() {
                return Err(ToolError::plain("url must be a non-empty string"));
            }
            let url = checked_url(raw)?;
            network_allowed(&self.settings, ctx, "web_fetch", &format!("fetch {url}")).await?;
            let settings = &self.settings;
            match tokio::time::timeout(settings.fetch_timeout, fetch(url, settings)).await {
                Ok(result) => result.map(ToolOutput::text),
                Err(_) => Err(web_error("WEB_FETCH_TIMEOUT", "web fetch timed out")),
            }
        })
    }
}

/// A URL the tool may request: short enough, absolute http(s), no credentials in it.
fn checked_url(raw: &str) -> Result<Url, ToolError> {
    if raw.len() > MAX_URL_LENGTH {
        return Err(web_error(
            "WEB_INVALID_URL",
            format!("URL exceeds the maximum length of {MAX_URL_LENGTH}"),
        ));
    }
    let url =
        Url::parse(raw).map_err(|_| web_error("WEB_INVALID_URL", format!("invalid URL: {raw}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(web_error(
            "WEB_INVALID_URL",
            format!(
                "unsupported URL scheme \"{}:\" (only http and https are allowed)",
                url.scheme()
            ),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(web_error(
            "WEB_BLOCKED_URL",
            "credentials in URLs are not allowed",
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(web_error("WEB_INVALID_URL", format!("invalid URL: {raw}")));
    }
    Ok(url)
}

/// Follows redirects (each hop checked and its address pinned), then reads and renders the
/// final response.
async fn fetch(mut url: Url, settings: &WebSettings) -> Result<String, ToolError> {
    let mut redirects = 0;
    let response = loop {
        let response = request(&url, settings).await?;
        let status = response.status().as_u16();
        if !matches!(status, 301 | 302 | 303 | 307 | 308) {
            break response;
        }
        let Some(location) = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Err(web_error(
                "WEB_PROVIDER_ERROR",
                format!("redirect response (HTTP {status}) without a Location header"),
            ));
        };
        if redirects == MAX_REDIRECTS {
            return Err(web_error(
                "WEB_REDIRECT_BLOCKED",
                format!("exceeded the maximum of {MAX_REDIRECTS} redirects"),
            ));
        }
        redirects += 1;
        let next = url.join(location).map_err(|_| {
            web_error(
                "WEB_INVALID_URL",
                format!("invalid URL: {location} (a redirect from {url})"),
            )
        })?;
        url = checked_url(next.as_str())?;
    };
    let status = response.status().as_u16();
    let final_url = response.url().to_string();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let kind = body_kind(content_type.as_deref())?;
    let declared = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_RESPONSE_BYTES as u64) {
        return Err(web_error(
            "WEB_FETCH_TOO_LARGE",
            format!("response exceeds the maximum of {MAX_RESPONSE_BYTES} bytes"),
        ));
    }
    let (bytes, mut truncated) = read_body(response).await?;
    let text = decode(&bytes, content_type.as_deref())?;
    let (text, source_cut) = cut_chars(&text, MAX_BODY_CHARS);
    truncated |= source_cut;
    let rendered = match kind {
        BodyKind::Html => markdown(text),
        BodyKind::Text => text.to_owned(),
    };
    Ok(render(&final_url, status, &rendered, truncated))
}

/// One request to `url`, connected to the address that passed the check.
async fn request(url: &Url, settings: &WebSettings) -> Result<reqwest::Response, ToolError> {
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(80);
    let address = crate::address::resolve(host, port, settings.allow_private).await?;
    // A provider may already be installed by another client; either way one is in place.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // No proxy: a proxy would look the name up again, and reach whatever it resolves to there.
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .resolve(host.trim_start_matches('[').trim_end_matches(']'), address)
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("dsh/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
        .build()
        .map_err(|e| web_error("WEB_PROVIDER_ERROR", format!("web fetch failed: {e}")))?;
    client
        .get(url.clone())
        .header(
            ACCEPT,
            "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.8",
        )
        .send()
        .await
        .map_err(|e| {
            web_error(
                "WEB_PROVIDER_ERROR",
                format!("web fetch failed: {}", e.without_url()),
            )
        })
}

/// How a body is given to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    /// Converted to markdown.
    Html,
    /// As it is.
    Text,
}

/// The kind of a body by its media type; anything that is not text is refused.
fn body_kind(content_type: Option<&str>) -> Result<BodyKind, ToolError> {
    let refused = || {
        web_error(
            "WEB_UNSUPPORTED_CONTENT_TYPE",
            format!(
                "unsupported content type \"{}\"",
                content_type.unwrap_or("unknown")
            ),
        )
    };
    let media = content_type
        .ok_or_else(refused)?
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "text/html" | "application/xhtml+xml" => Ok(BodyKind::Html),
        "application/json" | "application/xml" => Ok(BodyKind::Text),
        other
            if other.starts_with("text/")
                || other.ends_with("+json")
                || other.ends_with("+xml") =>
        {
            Ok(BodyKind::Text)
        }
        _ => Err(refused()),
    }
}

/// At most [`MAX_RESPONSE_BYTES`] of the body, and whether there was more.
async fn read_body(response: reqwest::Response) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| web_error("WEB_PROVIDER_ERROR", format!("web fetch failed: {e}")))?;
        let room = MAX_RESPONSE_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The body as text, by the charset its content type names (UTF-8 when none).
fn decode(bytes: &[u8], content_type: Option<&str>) -> Result<String, ToolError> {
    let charset = content_type
        .into_iter()
        .flat_map(|t| t.split(';').skip(1))
        .filter_map(|param| param.trim().split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, value)| value.trim().trim_matches('"').to_ascii_lowercase());
    match charset.as_deref() {
        None | Some("utf-8" | "utf8" | "us-ascii" | "ascii") => {
            Ok(String::from_utf8_lossy(bytes).into_owned())
        }
        // Latin-1: each byte is the character of that number.
        Some("iso-8859-1" | "latin1" | "l1") => Ok(bytes.iter().map(|&b| char::from(b)).collect()),
        Some(other) => Err(web_error(
            "WEB_UNSUPPORTED_CONTENT_TYPE",
            format!("unsupported charset \"{other}\""),
        )),
    }
}

/// At most `max` characters of `text`, and whether it was cut.
fn cut_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

/// HTML as markdown: headings with `#`, fenced code, `-` bullets; scripts and styles dropped.
/// A page the converter cannot take is given as it is.
fn markdown(html: &str) -> String {
    use htmd::options::{BulletListMarker, CodeBlockStyle, HeadingStyle, Options};
    let converter = htmd::HtmlToMarkdown::builder()
        .options(Options {
            heading_style: HeadingStyle::Atx,
            code_block_style: CodeBlockStyle::Fenced,
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Options::default()
        })
        .skip_tags(vec!["head", "script", "style", "noscript", "template"])
        .build();
    converter.convert(html).unwrap_or_else(|_| html.to_owned())
}

/// The result: `Fetched <url> (HTTP <status>)`, the content, and the footer when anything was
/// cut, the whole within [`MAX_OUTPUT_CHARS`] characters and [`MAX_OUTPUT_LINES`] lines.
fn render(url: &str, status: u16, content: &str, truncated: bool) -> String {
    let full = format!("Fetched {url} (HTTP {status})\n\n{content}");
    let lines_over = full.split('\n').count() > MAX_OUTPUT_LINES;
    let chars_over = full.chars().count() > MAX_OUTPUT_CHARS;
    if !(truncated || lines_over || chars_over) {
        return full;
    }
    let (kept, _) = cut_chars(&full, MAX_OUTPUT_CHARS - FOOTER.chars().count());
    // The footer's blank line and note count in the lines too.
    let kept = match kept.match_indices('\n').nth(MAX_OUTPUT_LINES - 3) {
        Some((at, _)) => &kept[..at],
        None => kept,
    };
    format!("{kept}{FOOTER}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn urls_are_checked_with_the_reference_texts() {
        for (raw, code, message) in [
            (
                "ftp://h/x",
                "WEB_INVALID_URL",
                "unsupported URL scheme \"ftp:\" (only http and https are allowed)",
            ),
            (
                "file:///etc/passwd",
                "WEB_INVALID_URL",
                "unsupported URL scheme \"file:\" (only http and https are allowed)",
            ),
            ("not a url", "WEB_INVALID_URL", "invalid URL: not a url"),
            (
                "https://u:p@h/",
                "WEB_BLOCKED_URL",
                "credentials in URLs are not allowed",
            ),
        ] {
            let error = checked_url(raw).unwrap_err();
            assert_eq!(
                (error.code(), error.message.as_str()),
                (Some(code), message),
                "{raw}"
            );
        }
        let long = format!("https://h/{}", "a".repeat(2048));
        assert_eq!(
            checked_url(&long).unwrap_err().message,
            "URL exceeds the maximum length of 2048"
        );
    }

    #[test]
    fn only_text_is_taken() {
        assert_eq!(
            body_kind(Some("text/html; charset=utf-8")).unwrap(),
            BodyKind::Html
        );
        assert_eq!(
            body_kind(Some("application/ld+json")).unwrap(),
            BodyKind::Text
        );
        assert_eq!(body_kind(Some("text/plain")).unwrap(), BodyKind::Text);
        assert_eq!(
            body_kind(Some("image/png")).unwrap_err().message,
            "unsupported content type \"image/png\""
        );
        assert_eq!(
            body_kind(None).unwrap_err().message,
            "unsupported content type \"unknown\""
        );
        assert_eq!(
            decode(b"caf\xe9", Some("text/plain; charset=ISO-8859-1")).unwrap(),
            "café"
        );
        assert!(decode(b"x", Some("text/plain; charset=shift_jis")).is_err());
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let md = markdown(
            "<html><head><style>p{}</style><script>alert(1)</script></head><body>\
             <h1>Title</h1><p>Some <a href=\"https://e.x/\">link</a>.</p>\
             <ul><li>one</li><li>two</li></ul><pre><code>let x = 1;</code></pre></body></html>",
        );
        assert!(md.starts_with("# Title"), "{md}");
        assert!(md.contains("[link](https://e.x/)"), "{md}");
        assert!(md.contains("- one"), "{md}");
        assert!(md.contains("```\nlet x = 1;\n```"), "{md}");
        assert!(!md.contains("alert"), "{md}");
    }

    #[test]
    fn long_results_are_cut_with_the_footer() {
        let text = "line\n".repeat(MAX_OUTPUT_LINES + 10);
        let out = render("https://h/", 200, &text, false);
        assert!(out.ends_with(FOOTER));
        assert_eq!(out.split('\n').count(), MAX_OUTPUT_LINES);
        let wide = "é".repeat(MAX_OUTPUT_CHARS);
        let out = render("https://h/", 200, &wide, false);
        assert_eq!(out.chars().count(), MAX_OUTPUT_CHARS);
        assert_eq!(
            render("https://h/", 404, "gone", false),
            "Fetched https://h/ (HTTP 404)\n\ngone"
        );
        assert!(render("https://h/", 200, "x", true).ends_with(FOOTER));
    }
}

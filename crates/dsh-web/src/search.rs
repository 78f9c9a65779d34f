//! `web_search`: up to four queries to the configured backend, their results merged and listed
//! as the reference lists them.

use std::sync::Arc;
use std::time::Duration;

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolError, ToolFacts, ToolFuture,
    ToolKind, ToolOutput,
};
use reqwest::Url;
use serde_json::Value;

use crate::access::{NativeSearch, SearchBackend, WebSettings, web_error};

/// Queries one call may send.
const MAX_QUERIES: usize = 4;
/// Sources one call lists.
const MAX_RESULTS: usize = 8;

/// The most searches the hosted search tool may run for one query.
const NATIVE_MAX_USES: u32 = 5;
/// The most tokens the model answering a hosted search may write.
const NATIVE_MAX_TOKENS: u32 = 4096;

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Source {
    url: String,
    title: Option<String>,
    snippet: Option<String>,
    published: Option<String>,
}

/// The `web_search` tool.
pub struct WebSearch {
    parameters: Parameters,
    settings: Arc<WebSettings>,
}

impl WebSearch {
    pub(crate) fn new(settings: Arc<WebSettings>) -> Self {
        WebSearch {
            parameters: Parameters::new(vec![Param::required(
                "queries",
                ParamType::Array(Box::new(ParamType::String)),
                "One to four search queries; their results are merged.",
            )]),
            settings,
        }
    }
}

impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Fetch, "Search the web for")
            .summary(queries_summary)
            .hook_names(&["WebSearch"])
            .read_only()
    }

    fn description(&self) -> &str {
        "Search the web for current information: one to four queries, answered with a list of \
         sources (title, link and snippet)."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "`web_search` finds current information; give `queries` one to four searches. Use \
             the snippets, read a page in full with web_fetch when you need it, and cite the URLs \
             you use as markdown links.",
        )
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let queries = queries(&args)?;
            let backend = match &self.settings.search {
                Ok(backend) => backend,
                Err(why) => return Err(web_error("WEB_PROVIDER_UNAVAILABLE", why.clone())),
            };
            crate::access::network_allowed(
                &self.settings,
                ctx,
                "web_search",
                &format!("search the web for {}", queries.join(", ")),
            )
            .await?;
            let limit = self.settings.search_timeout;
            let searches = queries.iter().map(|q| search(backend, q, limit));
            // Every search settles, so what each billed is known even when one failed.
            let searching = futures_util::future::join_all(searches);
            let Ok(settled) = tokio::time::timeout(limit, searching).await else {
                return Err(ToolError::coded(
                    "ToolTimeoutError",
                    "TOOL_TIMEOUT",
                    format!("tool call timed out after {}ms", limit.as_millis()),
                ));
            };
            let usage = dsh_protocol::Usage::sum(settled.iter().map(|s| match s {
                Ok(found) => &found.usage,
                Err(error) => &error.usage,
            }));
            let mut lists = Vec::new();
            for searched in settled {
                match searched {
                    Ok(found) => lists.push(found),
                    // A hosted search bills tokens like any request of the run.
                    Err(error) => return Err(error.with_usage(usage)),
                }
            }
            let lists = lists
                .into_iter()
                .map(|found| (found.sources, found.truncated));
            let (sources, truncated) = merge(lists.collect());
            let output = ToolOutput::text(render(&sources, truncated));
            // A hosted search bills tokens like any request of the run.
            Ok(match &backend {
                SearchBackend::Native(_) => output.with_usage(usage),
                _ => output,
            })
        })
    }
}

/// The queries, checked with the reference's texts; repeated ones sent once.
fn queries(args: &Arguments) -> Result<Vec<String>, ToolError> {
    let given: Vec<&str> = args
        .get("queries")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if given.is_empty() {
        return Err(ToolError::plain("queries must contain at least one query"));
    }
    if given.len() > MAX_QUERIES {
        return Err(ToolError::plain(format!(
            "queries must contain at most {MAX_QUERIES} queries"
        )));
    }
    if given.iter().any(|q| q.trim().is_empty()) {
        return Err(ToolError::plain("each query must be a non-empty string"));
    }
    let mut queries: Vec<String> = Vec::new();
    for query in given {
        if !queries.iter().any(|q| q == query) {
            queries.push(query.to_owned());
        }
    }
    Ok(queries)
}

/// One query's results, best first, and what finding them billed.
#[derive(Debug)]
struct Found {
    sources: Vec<Source>,
    truncated: bool,
    usage: dsh_protocol::Usage,
}

/// One query's results.
async fn search(backend: &SearchBackend, query: &str, limit: Duration) -> Result<Found, ToolError> {
    let name = backend.name();
    let failed = |e: &dyn std::fmt::Display| {
        web_error(
            "WEB_PROVIDER_ERROR",
            format!("{name} search request failed: {e}"),
        )
    };
    // Errors leave the URL out (a base URL may carry credentials), and redirects are not
    // followed (a key header would go along to wherever they point).
    let http = |e: reqwest::Error| failed(&e.without_url());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(limit)
        .user_agent(concat!("dsh/", env!("CARGO_PKG_VERSION"), " (web_search)"))
        .build()
        .map_err(http)?;
    let request = match backend {
        SearchBackend::Searxng { base_url } => {
            let mut url = endpoint(base_url, "search").map_err(|e| failed(&e))?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            client.get(url)
        }
        SearchBackend::Brave { base_url, api_key } => {
            let mut url = endpoint(base_url, "res/v1/web/search").map_err(|e| failed(&e))?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &MAX_RESULTS.to_string());
            client
                .get(url)
                .header("X-Subscription-Token", api_key)
                .header(reqwest::header::ACCEPT, "application/json")
        }
        SearchBackend::Native(native) => {
            // The settings refuse such an address already; checked again where the key leaves.
            if dsh_protocol::address::check_secret_destination(&native.base_url).is_err() {
                return Err(failed(&format!(
                    "{} is neither https nor on this machine, and the route's key would go with \
                     the search; give web.search.base_url an https:// address",
                    dsh_protocol::shown_url(&native.base_url)
                )));
            }
            let url = endpoint(&native.base_url, "messages").map_err(|e| failed(&e))?;
            client
                .post(url)
                .header("x-api-key", &native.api_key)
                .header("anthropic-version", "2023-06-01")
                .header(reqwest::header::ACCEPT, "application/json")
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(native_request(native, query).to_string())
        }
    };
    let sent_at = std::time::SystemTime::now();
    let response = request.send().await.map_err(http)?;
    let status = response.status();
    let body = read_capped(response).await.map_err(http)?;
    if !status.is_success() {
        let detail = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
            v["error"]["message"]
                .as_str()
                .or_else(|| v["error"].as_str())
                .or_else(|| v["message"].as_str())
                .map(str::to_owned)
        });
        let detail: Option<String> = detail.map(|d| d.chars().take(500).collect());
        return Err(web_error(
            "WEB_PROVIDER_ERROR",
            detail.unwrap_or_else(|| format!("{name} API error (HTTP {})", status.as_u16())),
        ));
    }
    let json: Value = serde_json::from_slice(&body).map_err(|e| {
        web_error(
            "WEB_PROVIDER_ERROR",
            format!("{name} returned an unprocessable response body: {e}"),
        )
    })?;
    if let SearchBackend::Native(native) = backend {
        return native_found(native, &json, sent_at);
    }
    let items = match backend {
        SearchBackend::Searxng { .. } => &json["results"],
        _ => &json["web"]["results"],
    };
    let sources: Vec<Source> = items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let (snippet, published) = match backend {
                SearchBackend::Searxng { .. } => (&item["content"], &item["publishedDate"]),
                _ => (&item["description"], &item["age"]),
            };
            Some(Source {
                url: text(&item["url"])?,
                title: text(&item["title"]),
                snippet: text(snippet),
                published: text(published),
            })
        })
        .collect();
    let truncated = sources.len() > MAX_RESULTS;
    Ok(Found {
        sources,
        truncated,
        usage: dsh_protocol::Usage::default(),
    })
}

/// A value's text, when it has some.
fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// The Messages request that asks the provider's model to search for `query` with its hosted
/// search tool. Whatever the model then writes is not used: the sources are.
fn native_request(native: &NativeSearch, query: &str) -> Value {
    serde_json::json!({
        "model": native.model,
        "max_tokens": NATIVE_MAX_TOKENS,
        "messages": [{
            "role": "user",
            "content": [{
                "type": "text",
                "text": format!("Search the web and report what you find about this query:\n{query}"),
            }],
        }],
        "tools": [{
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": NATIVE_MAX_USES,
        }],
    })
}

/// The sources of a hosted search's answer: each `web_search_result` of its
/// `web_search_tool_result` blocks (URL, title, page age), with the passage a citation of the
/// model's text quotes from it as the snippet. A block that reports an error instead
/// (`web_search_tool_result_error`) adds nothing; an answer whose every block did, or that has
/// none, is an error naming why.
fn native_found(
    native: &NativeSearch,
    json: &Value,
    sent_at: std::time::SystemTime,
) -> Result<Found, ToolError> {
    let count = |key: &str| json["usage"][key].as_u64().unwrap_or(0);
    let mut usage = if json["usage"].is_object() {
        dsh_protocol::Usage::new(
            count("input_tokens"),
            count("output_tokens"),
            count("cache_read_input_tokens"),
            count("cache_creation_input_tokens"),
            0,
        )
    } else {
        dsh_protocol::Usage::unreported()
    };
    if let Some(prices) = &native.prices {
        usage = usage.priced(prices, sent_at);
    }
    let blocks: Vec<&Value> = json["content"].as_array().into_iter().flatten().collect();
    let results: Vec<&Value> = blocks
        .iter()
        .copied()
        .filter(|b| b["type"] == "web_search_tool_result")
        .collect();
    let service = native.service;
    if results.is_empty() {
        return Err(web_error(
            "WEB_PROVIDER_ERROR",
            format!(
                "{service} returned no web_search_tool_result blocks; the request may not have \
                 triggered native web search"
            ),
        )
        .with_usage(usage));
    }
    let mut cited: Vec<(String, String)> = Vec::new();
    for block in blocks.iter().filter(|b| b["type"] == "text") {
        for citation in block["citations"].as_array().into_iter().flatten() {
            if let (Some(url), Some(quote)) =
                (text(&citation["url"]), text(&citation["cited_text"]))
                && !cited.iter().any(|(known, _)| *known == url)
            {
                cited.push((url, quote));
            }
        }
    }
    let mut sources: Vec<Source> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for block in results {
        match &block["content"] {
            Value::Array(items) => {
                for item in items.iter().filter(|i| i["type"] == "web_search_result") {
                    let Some(url) = text(&item["url"]) else {
                        continue;
                    };
                    if sources.iter().any(|s| s.url == url) {
                        continue;
                    }
                    let snippet = (cited.iter())
                        .find(|(known, _)| *known == url)
                        .map(|(_, quote)| quote.clone());
                    sources.push(Source {
                        url,
                        title: text(&item["title"]),
                        snippet,
                        published: text(&item["page_age"]),
                    });
                }
            }
            error => errors.extend(text(&error["error_code"])),
        }
    }
    if sources.is_empty() && !errors.is_empty() {
        return Err(web_error(
            "WEB_PROVIDER_ERROR",
            format!("{service} search failed: {}", errors.join(", ")),
        )
        .with_usage(usage));
    }
    let truncated = sources.len() > MAX_RESULTS;
    Ok(Found {
        sources,
        truncated,
        usage,
    })
}

/// The most bytes of a backend's answer read.
const MAX_ANSWER_BYTES: usize = 2_000_000;

/// At most [`MAX_ANSWER_BYTES`] of a response's body.
async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        body.extend_from_slice(&chunk[..chunk.len().min(MAX_ANSWER_BYTES - body.len())]);
        if body.len() == MAX_ANSWER_BYTES {
            break;
        }
    }
    Ok(body)
}

/// `web.search.base_url` cannot be made into a request's address. The base itself is never
/// quoted: it may carry credentials.
#[derive(Debug, thiserror::Error)]
#[error("web.search.base_url is not a usable URL ({0})")]
struct BadBaseUrl(#[source] <Url as std::str::FromStr>::Err);

/// `base` with `path` under it.
fn endpoint(base: &str, path: &str) -> Result<Url, BadBaseUrl> {
    let base = format!("{}/", base.trim_end_matches('/'));
    Url::parse(&base)
        .and_then(|url| url.join(path))
        .map_err(BadBaseUrl)
}

/// The queries' results taken in turn by rank, each URL once, at most [`MAX_RESULTS`].
fn merge(lists: Vec<(Vec<Source>, bool)>) -> (Vec<Source>, bool) {
    let mut truncated = lists.iter().any(|(_, cut)| *cut);
    let longest = lists.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let mut merged: Vec<Source> = Vec::new();
    for rank in 0..longest {
        for (list, _) in &lists {
            let Some(source) = list.get(rank) else {
                continue;
            };
            if merged.iter().any(|s| s.url == source.url) {
                continue;
            }
            if merged.len() == MAX_RESULTS {
                truncated = true;
                continue;
            }
            merged.push(source.clone());
        }
    }
    (merged, truncated)
}

/// The reference's layout: the sources, a note when some were left out, and the request to
/// cite them.
fn render(sources: &[Source], truncated: bool) -> String {
    let mut parts = Vec::new();
    if sources.is_empty() {
        parts.push("No results found.".to_owned());
    } else {
        let lines: Vec<String> = sources
            .iter()
            .map(|s| {
                let title = s.title.clone().unwrap_or_else(|| {
                    Url::parse(&s.url)
                        .ok()
                        .and_then(|u| u.host_str().map(str::to_owned))
                        .unwrap_or_else(|| s.url.clone())
                });
                let detail: Vec<String> = s
                    .snippet
                    .iter()
                    .cloned()
                    .chain(s.published.iter().map(|p| format!("({p})")))
                    .collect();
                let suffix = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", detail.join(" "))
                };
                format!("- [{title}]({}){suffix}", s.url)
            })
            .collect();
        parts.push(format!("Sources:\n{}", lines.join("\n")));
    }
    if truncated {
        parts.push(format!(
            "(Showing the first {} sources. Refine the query for more.)",
            sources.len()
        ));
    }
    parts.push("Cite the relevant URLs above as markdown links in your answer.".to_owned());
    parts.join("\n\n")
}

/// The queries of a call, one after the other.
fn queries_summary(args: &serde_json::Value) -> Option<String> {
    let queries = args.get("queries")?.as_array()?;
    let texts: Vec<&str> = queries
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    Some(texts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_search_is_titled_by_its_queries() {
        let args = serde_json::json!({"queries": ["rust openat2", "landlock abi"]});
        let (fetch, search) = crate::tools(WebSettings {
            network: crate::WebNetwork::On,
            allow_private: false,
            fetch_timeout: Duration::from_secs(1),
            search: Err("none".into()),
            search_timeout: Duration::from_secs(1),
        });
        let view = dsh_tools::CallView::of(&search.facts(), &args);
        assert_eq!(view.title, "Search the web for rust openat2; landlock abi");
        assert_eq!(
            dsh_tools::description_problems(&fetch),
            Vec::<String>::new()
        );
        assert_eq!(
            dsh_tools::description_problems(&search),
            Vec::<String>::new()
        );
    }

    fn native() -> NativeSearch {
        NativeSearch {
            service: "DeepSeek",
            base_url: "https://api.deepseek.com/anthropic/v1".into(),
            api_key: "k".into(),
            model: "deepseek-v4-flash".into(),
            prices: None,
        }
    }

    #[test]
    fn a_hosted_search_keeps_its_sources_and_skips_blocks_that_failed() {
        let answer = serde_json::json!({"content": [
            {"type": "web_search_tool_result", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
            {"type": "web_search_tool_result", "content": [
                {"type": "web_search_result", "url": "https://a.example/x", "title": "A", "page_age": "May 1"},
                {"type": "web_search_result", "url": "https://a.example/x", "title": "again"},
                {"type": "web_search_result", "url": "", "title": "no address"},
            ]},
            {"type": "text", "text": "A says so.", "citations": [{"url": "https://a.example/x", "cited_text": "the quote"}]},
        ], "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 5}});
        let found = native_found(&native(), &answer, std::time::SystemTime::now()).unwrap();
        assert_eq!(
            found.sources,
            [Source {
                url: "https://a.example/x".into(),
                title: Some("A".into()),
                snippet: Some("the quote".into()),
                published: Some("May 1".into()),
            }]
        );
        assert_eq!(found.usage.total_tokens, 17);
        // Every block failed: the error names why; no result block at all: the reference's text.
        let failed = serde_json::json!({"content": [
            {"type": "web_search_tool_result", "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}},
        ]});
        let error = native_found(&native(), &failed, std::time::SystemTime::now()).unwrap_err();
        assert_eq!(error.message, "DeepSeek search failed: unavailable");
        let none = serde_json::json!({"content": [{"type": "text", "text": "I know this."}]});
        let error = native_found(&native(), &none, std::time::SystemTime::now()).unwrap_err();
        assert!(
            error
                .message
                .starts_with("DeepSeek returned no web_search_tool_result blocks")
        );
    }

    fn source(url: &str, title: Option<&str>) -> Source {
        Source {
            url: url.into(),
            title: title.map(Into::into),
            snippet: None,
            published: None,
        }
    }

    #[test]
    fn results_are_listed_as_the_reference_lists_them() {
        let mut first = source("https://blog.rust-lang.org/r.html", Some("Rust 1.80"));
        first.snippet = Some("LazyCell is stable".into());
        first.published = Some("2 days ago".into());
        let text = render(
            &[first, source("https://github.com/rust-lang/rust", None)],
            false,
        );
        assert_eq!(
            text,
            "Sources:\n- [Rust 1.80](https://blog.rust-lang.org/r.html) — LazyCell is stable (2 days ago)\n\
             - [github.com](https://github.com/rust-lang/rust)\n\n\
             Cite the relevant URLs above as markdown links in your answer."
        );
        assert_eq!(
            render(&[], false),
            "No results found.\n\nCite the relevant URLs above as markdown links in your answer."
        );
    }

    #[test]
    fn merging_takes_ranks_in_turn_without_repeats() {
        let a = (0..6)
            .map(|i| source(&format!("https://a/{i}"), None))
            .collect();
        let b = vec![source("https://a/0", None), source("https://b/1", None)];
        let c = (0..5)
            .map(|i| source(&format!("https://c/{i}"), None))
            .collect();
        let (merged, truncated) = merge(vec![(a, false), (b, false), (c, false)]);
        let urls: Vec<&str> = merged.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://a/0",
                "https://c/0",
                "https://a/1",
                "https://b/1",
                "https://c/1",
                "https://a/2",
                "https://c/2",
                "https://a/3"
            ]
        );
        assert!(truncated);
    }
}

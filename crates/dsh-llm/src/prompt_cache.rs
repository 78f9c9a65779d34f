//! Prompt caching: what a request carries so that its provider bills the part it has already
//! seen at the cache rate.
//!
//! Every provider here caches a prompt's prefix, and a step of an agent resends the whole
//! conversation, so all but the newest messages can be read from the cache. They differ in
//! what the client must do for it:
//! - Anthropic Messages caches only up to blocks the request marks with `cache_control`
//!   ([`mark_breakpoints`]);
//! - OpenAI caches every long enough prefix by itself and routes a request to a cache by its
//!   first tokens and the request's `prompt_cache_key` ([`session_key`]);
//! - DeepSeek caches by itself and takes no key: it only needs the prefix to stay the same,
//!   which is what every dialect needs (nothing before the newest messages changes between
//!   steps: the system prompt, the tools and the history are sent as they were).

use std::hash::{BuildHasher, Hasher};

use serde_json::{Value, json};

/// Marks where Anthropic may cache the request's prefix. Anthropic's documented rules, and
/// which choice follows from each:
///
/// - A cached prefix is the prompt in the order tools, system, messages, up to and including
///   a marked block, and it is found again only by an exact match of that prefix. So the first
///   mark goes on the system prompt (or on the last tool, without one): the tools and the
///   system prompt are the same for every request of a route, so a new conversation, or one
///   whose history a compaction rewrote, still reads them from the cache.
/// - A request reads the longest cached prefix found at a mark, looking back from each mark
///   over at most 20 blocks for an earlier one. A step adds an answer and its results (two
///   blocks a call, so a step of ten calls is past that look-back), so the second mark goes
///   on the exact end of the previous request: the last block of the message before the last
///   answer. The read then never depends on the look-back.
/// - Marking a block writes the prefix up to it to the cache, billed at 1.25 times the input
///   rate, while a read costs a tenth of it. So the third mark goes on the last block of the
///   request: this step writes only what it adds, and the next step reads all of it.
/// - A request may mark at most four blocks (a fifth is refused): these are three, and the
///   fourth is left unused.
/// - Thinking blocks cannot be marked, nor empty text blocks: a mark goes on the last block of
///   its message that can take one (a text, image, tool use or tool result).
/// - A prefix shorter than the model's minimum (1,024 to 4,096 tokens) is not cached, without
///   an error: marking a short request costs nothing.
pub(crate) fn mark_breakpoints(body: &mut Value) {
    let mark = json!({"type": "ephemeral"});
    let system = body["system"].as_str().unwrap_or_default().to_owned();
    if !system.is_empty() {
        // Only a block takes a mark, so the system prompt becomes a list of one block.
        body["system"] = json!([{"type": "text", "text": system, "cache_control": mark}]);
    } else if let Some(last) = body["tools"].as_array_mut().and_then(|t| t.last_mut()) {
        last["cache_control"] = mark.clone();
    }
    let Some(messages) = body["messages"].as_array_mut() else {
        return;
    };
    let Some(last) = messages.len().checked_sub(1) else {
        return;
    };
    let previous_end = messages[..last]
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .and_then(|answer| answer.checked_sub(1));
    for at in previous_end.into_iter().chain([last]) {
        let blocks = messages[at]["content"].as_array_mut();
        if let Some(block) = blocks.and_then(|b| b.iter_mut().rev().find(|b| can_mark(b))) {
            block["cache_control"] = mark.clone();
        }
    }
}

/// Whether Anthropic takes a `cache_control` mark on this content block.
fn can_mark(block: &Value) -> bool {
    match block["type"].as_str().unwrap_or_default() {
        "thinking" | "redacted_thinking" => false,
        "text" => block["text"].as_str().is_some_and(|t| !t.is_empty()),
        _ => true,
    }
}

/// A `prompt_cache_key` for one client, so that OpenAI sends its requests to the cache that
/// saw their prefix: it routes by the prompt's first tokens together with this key, and one
/// key a conversation keeps the conversation on one cache while other sessions with the same
/// system prompt and tools go elsewhere. A route is connected once a run (a session's, its
/// subagents and compactions included), so the key is made here, at random: it names nothing
/// about the user or the workspace.
pub(crate) fn session_key() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    format!("dsh-{:016x}", hasher.finish())
}

/// Whether a chat-completions server is one documented to take `prompt_cache_key`: OpenAI's
/// own API and Azure OpenAI. The same wire format reaches many other servers (vLLM, Ollama,
/// OpenRouter, Gemini's compatible endpoint...), and some refuse a request with a field they
/// do not know, so they get none: a key would only route, never decide, whether OpenAI caches.
pub(crate) fn takes_prompt_cache_key(base_url: &str) -> bool {
    reqwest::Url::parse(base_url.trim())
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .is_some_and(|host| host == "api.openai.com" || host.ends_with(".openai.azure.com"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(body: &Value) -> Vec<String> {
        let mut found = Vec::new();
        let mut walk = |path: String, value: &Value| {
            if value.get("cache_control").is_some() {
                found.push(path);
            }
        };
        for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
            walk(format!("tools/{i}"), tool);
        }
        for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
            walk(format!("system/{i}"), block);
        }
        for (m, message) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (b, block) in message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                walk(format!("messages/{m}/{b}"), block);
            }
        }
        found
    }

    fn text(text: &str) -> Value {
        json!({"type": "text", "text": text})
    }

    #[test]
    fn the_system_prompt_the_previous_end_and_this_end_are_marked() {
        let mut body = json!({
            "system": "sys",
            "tools": [{"name": "a"}, {"name": "b"}],
            "messages": [
                {"role": "user", "content": [text("task")]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "1"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "tool_use", "id": "2"},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "2"},
                    text(""),
                ]},
            ],
        });
        mark_breakpoints(&mut body);
        assert_eq!(
            marks(&body),
            ["system/0", "messages/2/0", "messages/4/0"],
            "{body:#}"
        );
        assert_eq!(body["system"][0]["text"], "sys");
        assert!(marks(&body).len() <= 4, "Anthropic refuses a fifth mark");
    }

    #[test]
    fn without_a_system_prompt_the_last_tool_is_marked_and_a_first_request_has_one_end() {
        let mut body = json!({
            "tools": [{"name": "a"}, {"name": "b"}],
            "messages": [{"role": "user", "content": [text("task")]}],
        });
        mark_breakpoints(&mut body);
        assert_eq!(marks(&body), ["tools/1", "messages/0/0"]);
        assert!(body.get("system").is_none());
    }

    #[test]
    fn only_openais_own_servers_get_a_prompt_cache_key() {
        assert!(takes_prompt_cache_key("https://api.openai.com/v1"));
        assert!(takes_prompt_cache_key(
            "https://my-resource.openai.azure.com/openai/v1"
        ));
        for other in [
            "https://api.deepseek.com",
            "https://openrouter.ai/api/v1",
            "http://127.0.0.1:8000/v1",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "https://api.openai.com.example.net/v1",
            "not a url",
        ] {
            assert!(!takes_prompt_cache_key(other), "{other}");
        }
        let (one, two) = (session_key(), session_key());
        assert_ne!(one, two);
        assert!(one.starts_with("dsh-") && one.len() == 20, "{one}");
    }
}

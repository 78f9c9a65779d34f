//! Billing as the providers do. A server told to bill as a provider
//! ([`crate::ScriptedServer::bill_as`]) measures every request, works out how much of it that
//! provider's prompt cache would have served, reports the usage in the provider's own fields
//! (so dsh reads it as it would read the real API's) and keeps each bill for the test to price.
//!
//! Each provider's rules, as its documentation gives them, and what this model simplifies:
//!
//! - **Anthropic Messages.** Only a prefix ending at a block marked `cache_control` is cached
//!   (tools, then system, then messages, up to and including the block), and only when it is at
//!   least the model's minimum (1,024 tokens here, as for the Sonnet models). A request reads the
//!   longest prefix cached before, looking at each of its marks and at most 20 blocks back from
//!   each; it writes the prefix at each mark not yet cached. More than four marks, a marked
//!   thinking block or a marked empty text is refused (400). Usage: `input_tokens` (after the
//!   read and the write), `cache_read_input_tokens`, `cache_creation_input_tokens`.
//! - **OpenAI** (chat completions and Responses). Every prompt of 1,024 tokens or more is
//!   cached; a request is routed by its first 256 tokens together with its `prompt_cache_key`,
//!   and reads the longest prefix it shares with a prompt seen on the same route, counted from
//!   1,024 tokens up in steps of 128. No write is billed (models before GPT-5.6). Usage:
//!   `prompt_tokens` or `input_tokens` with `cached_tokens` inside them.
//! - **DeepSeek.** Each request's whole input is kept as a prefix unit, and a prefix two
//!   requests share (past 64 tokens) becomes a unit too; a later request reads the longest unit
//!   it begins with, counted in whole 64-token units. No write is billed. Usage: `prompt_tokens`
//!   with `prompt_cache_hit_tokens` and `prompt_cache_miss_tokens`.
//!
//! Simplified for every provider: a token is 4 bytes of the request's JSON, each message (or
//! block, or item) written out on its own and the tools first, in the order dsh sent them; the
//! cache never expires (a test runs for seconds, well within the 5 minutes or more each keeps
//! an entry) and is ready as soon as a request arrives; one cache serves the whole server (no
//! second machine for OpenAI's overflow, no look at the rate of requests); DeepSeek's unit at
//! the end of the model's own answer and its units at fixed intervals are left out, so it
//! never serves more than the real one would.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::Request;

/// Whose rules a server bills by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRules {
    DeepSeek,
    OpenAi,
    Anthropic,
}

/// What one request was billed, in tokens. `prompt` is every input token; `cache_read` and
/// `cache_write` are parts of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bill {
    pub prompt: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub output: u64,
}

impl Bill {
    /// The input billed at the full rate.
    pub fn uncached(&self) -> u64 {
        self.prompt - self.cache_read - self.cache_write
    }
}

/// The measure of every provider here: a token is 4 bytes.
const BYTES_PER_TOKEN: usize = 4;
/// The shortest prefix Anthropic caches for the Sonnet models.
const ANTHROPIC_MIN_TOKENS: u64 = 1024;
/// How many blocks back from a mark Anthropic looks for a cached prefix.
const ANTHROPIC_LOOKBACK: usize = 20;
/// The most blocks one Anthropic request may mark.
const ANTHROPIC_MAX_MARKS: usize = 4;
/// The shortest prompt OpenAI caches, and the step its cached part grows by.
const OPENAI_MIN_TOKENS: u64 = 1024;
const OPENAI_STEP: u64 = 128;
/// How much of a prompt OpenAI routes by.
const OPENAI_ROUTE_TOKENS: usize = 256;
/// DeepSeek's storage unit.
const DEEPSEEK_UNIT: u64 = 64;

fn tokens(bytes: usize) -> u64 {
    (bytes / BYTES_PER_TOKEN) as u64
}

/// A server's cache and the bills it sent.
pub(crate) struct Billing {
    rules: CacheRules,
    cache: Mutex<Cache>,
    bills: Mutex<Vec<Bill>>,
}

#[derive(Default)]
struct Cache {
    /// Anthropic: the prefixes written, by the hash of the model and the blocks.
    marked: HashSet<u64>,
    /// OpenAI: the prompts seen on each route (model, key and first tokens).
    routes: HashMap<u64, Vec<Vec<u8>>>,
    /// DeepSeek: the prefix units of each model.
    units: HashMap<String, Vec<Vec<u8>>>,
}

impl Billing {
    pub(crate) fn new(rules: CacheRules) -> Billing {
        Billing {
            rules,
            cache: Mutex::new(Cache::default()),
            bills: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn bills(&self) -> Vec<Bill> {
        self.bills.lock().unwrap().clone()
    }

    /// Bills `request` (its answer `output` tokens long): the usage object the provider sends,
    /// or the refusal it would answer with.
    pub(crate) fn bill(&self, request: &Request, output: u64) -> Result<Value, String> {
        let model = request.body["model"].as_str().unwrap_or_default();
        let messages_api = request.path.ends_with("/messages");
        let responses_api = request.body.get("input").is_some();
        let mut cache = self.cache.lock().unwrap();
        let (prompt, cache_read, cache_write) = match self.rules {
            CacheRules::Anthropic if messages_api => anthropic(&mut cache, model, request)?,
            CacheRules::OpenAi if !messages_api => openai(&mut cache, model, request),
            CacheRules::DeepSeek if !messages_api && !responses_api => {
                deepseek(&mut cache, model, request)
            }
            rules => {
                return Err(format!(
                    "this server bills as {rules:?}, which does not serve {}",
                    request.path
                ));
            }
        };
        let bill = Bill {
            prompt,
            cache_read,
            cache_write,
            output,
        };
        self.bills.lock().unwrap().push(bill);
        Ok(match self.rules {
            CacheRules::Anthropic => json!({"input_tokens": bill.uncached(),
                "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write,
                "output_tokens": output}),
            CacheRules::OpenAi if responses_api => json!({"input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": cache_read},
                "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + output}),
            CacheRules::OpenAi => json!({"prompt_tokens": prompt, "completion_tokens": output,
                "total_tokens": prompt + output,
                "prompt_tokens_details": {"cached_tokens": cache_read}}),
            CacheRules::DeepSeek => json!({"prompt_tokens": prompt, "completion_tokens": output,
                "total_tokens": prompt + output, "prompt_cache_hit_tokens": cache_read,
                "prompt_cache_miss_tokens": prompt - cache_read}),
        })
    }
}

/// A chat-completions or Responses prompt as one byte string: the tools, the instructions,
/// then each message or item on a line of its own.
fn rendered(request: &Request) -> Vec<u8> {
    let mut out = Vec::new();
    let body = &request.body;
    let head = [&body["tools"], &body["instructions"]];
    for part in head
        .into_iter()
        .filter(|v| !v.is_null())
        .chain(request.messages())
    {
        out.extend_from_slice(part.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn openai(cache: &mut Cache, model: &str, request: &Request) -> (u64, u64, u64) {
    let prompt = rendered(request);
    let mut route = DefaultHasher::new();
    route.write(model.as_bytes());
    route.write(request.body["prompt_cache_key"].to_string().as_bytes());
    route.write(&prompt[..prompt.len().min(OPENAI_ROUTE_TOKENS * BYTES_PER_TOKEN)]);
    let seen = cache.routes.entry(route.finish()).or_default();
    let shared = seen.iter().map(|p| shared_prefix(p, &prompt)).max();
    let shared = tokens(shared.unwrap_or(0));
    let read = if shared >= OPENAI_MIN_TOKENS {
        OPENAI_MIN_TOKENS + (shared - OPENAI_MIN_TOKENS) / OPENAI_STEP * OPENAI_STEP
    } else {
        0
    };
    let total = tokens(prompt.len());
    if total >= OPENAI_MIN_TOKENS {
        seen.push(prompt);
    }
    (total, read, 0)
}

fn deepseek(cache: &mut Cache, model: &str, request: &Request) -> (u64, u64, u64) {
    let prompt = rendered(request);
    let units = cache.units.entry(model.to_owned()).or_default();
    let whole = units.iter().filter(|u| prompt.starts_with(u)).map(Vec::len);
    let hit = whole.max().unwrap_or(0);
    let common = units.iter().map(|u| shared_prefix(u, &prompt)).max();
    let common = common.unwrap_or(0);
    if common > hit && tokens(common) >= DEEPSEEK_UNIT {
        units.push(prompt[..common].to_vec());
    }
    let total = tokens(prompt.len());
    units.push(prompt);
    (total, tokens(hit) / DEEPSEEK_UNIT * DEEPSEEK_UNIT, 0)
}

/// One block of an Anthropic prompt: its text without the mark, and whether it was marked.
struct Block {
    text: String,
    marked: bool,
}

/// The blocks of a Messages request in the order Anthropic caches them, or the refusal of a
/// mark where none may go.
fn anthropic_blocks(body: &Value) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut push = |role: &str, block: &Value| -> Result<(), String> {
        let mut block = block.clone();
        let marked = block
            .as_object_mut()
            .and_then(|b| b.remove("cache_control"))
            .is_some();
        let kind = block["type"].as_str().unwrap_or_default();
        if marked && matches!(kind, "thinking" | "redacted_thinking") {
            return Err("cache_control cannot be set on a thinking block".into());
        }
        if marked && kind == "text" && block["text"].as_str().is_some_and(str::is_empty) {
            return Err("cache_control cannot be set on an empty text block".into());
        }
        let text = json!({"role": role, "block": block}).to_string();
        blocks.push(Block { text, marked });
        Ok(())
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tools", tool)?;
    }
    match &body["system"] {
        Value::String(text) => push("system", &json!({"type": "text", "text": text}))?,
        Value::Array(parts) => {
            for part in parts {
                push("system", part)?;
            }
        }
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        match &message["content"] {
            Value::String(text) => push(role, &json!({"type": "text", "text": text}))?,
            content => {
                for block in content.as_array().into_iter().flatten() {
                    push(role, block)?;
                }
            }
        }
    }
    Ok(blocks)
}

fn anthropic(cache: &mut Cache, model: &str, request: &Request) -> Result<(u64, u64, u64), String> {
    let blocks = anthropic_blocks(&request.body)?;
    let marks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].marked).collect();
    if marks.len() > ANTHROPIC_MAX_MARKS {
        return Err(format!(
            "at most {ANTHROPIC_MAX_MARKS} blocks may carry cache_control; this request marks {}",
            marks.len()
        ));
    }
    // The size and the identity of the prefix ending at each block.
    let mut hasher = DefaultHasher::new();
    hasher.write(model.as_bytes());
    let mut bytes = 0;
    let mut ends = Vec::with_capacity(blocks.len());
    for block in &blocks {
        hasher.write(block.text.as_bytes());
        hasher.write_u8(b'\n');
        bytes += block.text.len() + 1;
        ends.push((tokens(bytes), hasher.finish()));
    }
    let mut read = 0;
    for &mark in &marks {
        let window = mark.saturating_sub(ANTHROPIC_LOOKBACK - 1)..=mark;
        if let Some(at) = window.rev().find(|&i| cache.marked.contains(&ends[i].1)) {
            read = read.max(ends[at].0);
        }
    }
    let mut written = read;
    for &mark in &marks {
        let (size, id) = ends[mark];
        if size >= ANTHROPIC_MIN_TOKENS && size > read {
            cache.marked.insert(id);
            written = written.max(size);
        }
    }
    Ok((tokens(bytes), read, written - read))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Instant;

    use super::*;

    fn request(path: &str, body: Value) -> Request {
        Request {
            method: "POST".into(),
            path: path.into(),
            headers: BTreeMap::new(),
            body,
            received_at: Instant::now(),
        }
    }

    /// A text of `n` tokens.
    fn text(n: usize, fill: char) -> String {
        fill.to_string().repeat(n * BYTES_PER_TOKEN)
    }

    fn messages_request(marked: &[bool], sizes: &[usize]) -> Request {
        let content: Vec<Value> = sizes
            .iter()
            .zip(marked)
            .enumerate()
            .map(|(i, (&n, &mark))| {
                let mut block = json!({"type": "text", "text": text(n, (b'a' + i as u8) as char)});
                if mark {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                block
            })
            .collect();
        request(
            "/v1/messages",
            json!({"model": "m", "messages": [{"role": "user", "content": content}]}),
        )
    }

    fn bill_of(billing: &Billing, request: &Request) -> Bill {
        billing.bill(request, 10).unwrap();
        *billing.bills().last().unwrap()
    }

    #[test]
    fn anthropic_caches_only_at_marks_past_the_minimum() {
        let billing = Billing::new(CacheRules::Anthropic);
        // Unmarked, nothing is cached however often it is sent.
        let plain = messages_request(&[false, false], &[2000, 10]);
        for _ in 0..2 {
            let bill = bill_of(&billing, &plain);
            assert_eq!((bill.cache_read, bill.cache_write), (0, 0));
        }
        // Marked at its end: written once, then read.
        let marked = messages_request(&[false, true], &[2000, 10]);
        let first = bill_of(&billing, &marked);
        assert!(
            first.cache_write > 2000 && first.cache_read == 0,
            "{first:?}"
        );
        let again = bill_of(&billing, &marked);
        assert_eq!(
            (again.cache_read, again.cache_write),
            (first.cache_write, 0)
        );
        // A prefix below the minimum is not cached.
        let short = messages_request(&[true, false], &[500, 10]);
        bill_of(&billing, &short);
        assert_eq!(bill_of(&billing, &short).cache_read, 0);
    }

    #[test]
    fn anthropic_reads_back_at_most_twenty_blocks_from_a_mark() {
        let billing = Billing::new(CacheRules::Anthropic);
        let mut marked = vec![true];
        marked.extend([false; 25]);
        let mut sizes = vec![2000];
        sizes.extend([5; 25]);
        let first = messages_request(&marked[..1], &sizes[..1]);
        bill_of(&billing, &first);
        // A mark 25 blocks on does not find the cached first block; one 20 blocks on does.
        let mut far = marked.clone();
        far[25] = true;
        far[0] = false;
        let bill = bill_of(&billing, &messages_request(&far, &sizes));
        assert_eq!(bill.cache_read, 0, "{bill:?}");
        let mut near = marked[..20].to_vec();
        near[19] = true;
        near[0] = false;
        assert!(bill_of(&billing, &messages_request(&near, &sizes[..20])).cache_read > 0);
        // Five marks are refused.
        let five = messages_request(&[true; 5], &[1, 1, 1, 1, 1]);
        assert!(billing.bill(&five, 1).unwrap_err().contains("at most 4"));
    }

    fn chat(key: Option<&str>, messages: &[String]) -> Request {
        let mut body = json!({"model": "m", "messages": messages.iter()
            .map(|m| json!({"role": "user", "content": m})).collect::<Vec<_>>()});
        if let Some(key) = key {
            body["prompt_cache_key"] = json!(key);
        }
        request("/v1/chat/completions", body)
    }

    #[test]
    fn openai_reads_shared_prefixes_in_steps_of_128_on_the_same_route() {
        let billing = Billing::new(CacheRules::OpenAi);
        let history = vec![text(1500, 'a')];
        assert_eq!(bill_of(&billing, &chat(Some("k"), &history)).cache_read, 0);
        let mut longer = history;
        longer.push(text(300, 'b'));
        let bill = bill_of(&billing, &chat(Some("k"), &longer));
        // 1,500 tokens and a few bytes of JSON are shared: 1,024 + 3 * 128 of them are read.
        assert_eq!(bill.cache_read, 1408, "{bill:?}");
        // Another key is another route, with nothing cached yet.
        assert_eq!(bill_of(&billing, &chat(Some("j"), &longer)).cache_read, 0);
        // Below 1,024 tokens nothing is cached.
        let short = vec![text(900, 'c')];
        bill_of(&billing, &chat(None, &short));
        assert_eq!(bill_of(&billing, &chat(None, &short)).cache_read, 0);
    }

    #[test]
    fn deepseek_reads_whole_units_in_steps_of_64() {
        let billing = Billing::new(CacheRules::DeepSeek);
        let first = vec![text(1000, 'a'), text(100, 'b')];
        assert_eq!(bill_of(&billing, &chat(None, &first)).cache_read, 0);
        let mut next = first;
        next.push(text(100, 'c'));
        let bill = bill_of(&billing, &chat(None, &next));
        assert_eq!(bill.cache_read % 64, 0);
        assert!(
            bill.cache_read > 1100 - 64 && bill.cache_read <= 1100,
            "{bill:?}"
        );
        // A request that shares only the first message reads nothing, but a third that
        // shares it again reads the unit the first two had in common.
        let other = vec![text(1000, 'a'), text(100, 'd')];
        assert_eq!(bill_of(&billing, &chat(None, &other)).cache_read, 0);
        let third = vec![text(1000, 'a'), text(100, 'e')];
        let bill = bill_of(&billing, &chat(None, &third));
        assert!(bill.cache_read >= 1000 - 64, "{bill:?}");
    }
}

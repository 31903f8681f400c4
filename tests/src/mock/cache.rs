//! Prompt-caching simulations.
//!
//! Anthropic: explicit breakpoints (`cache_control` on blocks). The prompt is
//! cut into blocks in prefix order (tools, system, message content); each
//! block boundary has a key hashing everything up to it (with
//! `cache_control` stripped, so moving a breakpoint never changes a key).
//! Entries are written at breakpoints whose prefix is long enough; reads look
//! back at most 20 blocks from each breakpoint for the longest live entry.
//!
//! OpenAI: automatic caching of message prefixes; no markers.
//!
//! Both caches learn a request's entries only when its response starts
//! (see [`AnthropicCache::commit`]).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::CacheOutcome;

/// At most this many blocks may carry `cache_control` in one request.
pub const MAX_BREAKPOINTS: usize = 4;
/// How many blocks before a breakpoint are checked for an existing entry.
pub const LOOKBACK_BLOCKS: usize = 20;
const FIVE_MINUTES: Duration = Duration::from_secs(5 * 60);
const ONE_HOUR: Duration = Duration::from_secs(60 * 60);
/// How long an OpenAI prefix stays cached after its last use.
const OPENAI_TTL: Duration = Duration::from_secs(10 * 60);

/// The mock's token count of a piece of prompt or output: a quarter of its
/// bytes, rounded up.
pub fn tokens_of(len: usize) -> u64 {
    (len as u64).div_ceil(4)
}

fn fold(prev: u64, marker: &str, bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write_u64(prev);
    h.write(marker.as_bytes());
    h.write_u8(0xff);
    h.write_usize(bytes.len());
    h.write(bytes);
    h.finish()
}

fn seed(api: &str, model: &str) -> u64 {
    fold(0, api, model.as_bytes())
}

/// One block of an Anthropic prompt, in prefix order.
#[derive(Clone, Debug)]
pub struct PromptBlock {
    /// Key of the prefix ending with (and including) this block.
    pub key: u64,
    /// Tokens of this block alone.
    pub tokens: u64,
    /// The block's breakpoint TTL, when it carries `cache_control`.
    pub breakpoint: Option<Duration>,
}

/// Compact serialization of a block with its top-level `cache_control`
/// removed (key order preserved), plus the parsed `cache_control` TTL.
fn strip_block(block: &Value, at: &str) -> Result<(Vec<u8>, Option<Duration>), String> {
    let mut v = block.clone();
    let mut breakpoint = None;
    if let Value::Object(map) = &mut v
        && let Some(cc) = map.shift_remove("cache_control")
    {
        breakpoint = parse_cache_control(&cc, at)?;
    }
    let bytes = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
    Ok((bytes, breakpoint))
}

fn parse_cache_control(cc: &Value, at: &str) -> Result<Option<Duration>, String> {
    if cc.is_null() {
        return Ok(None);
    }
    let Some(obj) = cc.as_object() else {
        return Err(format!("{at}.cache_control: Input should be an object"));
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("ephemeral") => {}
        other => {
            return Err(format!(
                "{at}.cache_control.type: Input should be 'ephemeral' (got {})",
                other.map_or("nothing".to_string(), |s| format!("'{s}'"))
            ));
        }
    }
    match obj.get("ttl") {
        None | Some(Value::Null) => Ok(Some(FIVE_MINUTES)),
        Some(Value::String(s)) if s == "5m" => Ok(Some(FIVE_MINUTES)),
        Some(Value::String(s)) if s == "1h" => Ok(Some(ONE_HOUR)),
        Some(other) => Err(format!(
            "{at}.cache_control.ttl: Input should be '5m' or '1h' (got {other})"
        )),
    }
}

/// Cuts an Anthropic Messages request into prompt blocks in prefix order:
/// each tool, each system block, each content block of each message (string
/// content counts as one text block). Errors are `invalid_request_error`
/// messages.
pub fn anthropic_blocks(body: &Value) -> Result<Vec<PromptBlock>, String> {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let mut blocks = Vec::new();
    let mut key = seed("anthropic", model);
    let mut push = |marker: &str, block: &Value, at: &str| -> Result<(), String> {
        let (bytes, breakpoint) = strip_block(block, at)?;
        key = fold(key, marker, &bytes);
        blocks.push(PromptBlock {
            key,
            tokens: tokens_of(bytes.len()),
            breakpoint,
        });
        Ok(())
    };
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for (i, tool) in tools.iter().enumerate() {
            push("tool", tool, &format!("tools.{i}"))?;
        }
    }
    match body.get("system") {
        Some(Value::String(s)) => push("system", &text_block(s), "system")?,
        Some(Value::Array(system)) => {
            for (i, block) in system.iter().enumerate() {
                push("system", block, &format!("system.{i}"))?;
            }
        }
        _ => {}
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for (m, message) in messages.iter().enumerate() {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("");
            let first = format!("{role}:first");
            match message.get("content") {
                Some(Value::String(s)) => {
                    push(&first, &text_block(s), &format!("messages.{m}.content"))?
                }
                Some(Value::Array(content)) => {
                    for (i, block) in content.iter().enumerate() {
                        let marker = if i == 0 { first.as_str() } else { role };
                        push(marker, block, &format!("messages.{m}.content.{i}"))?;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(blocks)
}

fn text_block(s: &str) -> Value {
    serde_json::json!({"type": "text", "text": s})
}

struct Entry {
    ttl: Duration,
    expires: Instant,
}

/// Entries a request will write (or refresh) once its response starts.
#[derive(Clone, Debug, Default)]
pub struct AnthropicWrites {
    entries: Vec<(u64, Duration)>,
}

/// The usage figures of one Anthropic request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AnthropicUsage {
    pub outcome: CacheOutcome,
    /// Of `outcome.creation`, the tokens written with a 5-minute TTL.
    pub creation_5m: u64,
    /// Of `outcome.creation`, the tokens written with a 1-hour TTL.
    pub creation_1h: u64,
}

/// The Anthropic prompt cache of one mock server (all models; keys include
/// the model).
#[derive(Default)]
pub struct AnthropicCache {
    entries: HashMap<u64, Entry>,
    clock_offset: Duration,
}

impl AnthropicCache {
    fn now(&self) -> Instant {
        Instant::now() + self.clock_offset
    }

    /// Moves the cache's clock forward (to expire entries in tests).
    pub fn advance(&mut self, by: Duration) {
        self.clock_offset += by;
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn live(&self, key: u64, now: Instant) -> bool {
        self.entries.get(&key).is_some_and(|e| e.expires > now)
    }

    /// Decides reads and writes for a request's blocks. Errors (too many
    /// breakpoints, TTL order) are `invalid_request_error` messages.
    pub fn plan(
        &self,
        blocks: &[PromptBlock],
        min_cacheable_tokens: u64,
    ) -> Result<(AnthropicUsage, AnthropicWrites), String> {
        let breakpoints: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.breakpoint.is_some())
            .map(|(i, _)| i)
            .collect();
        if breakpoints.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                breakpoints.len()
            ));
        }
        // A 1-hour entry may not come after a 5-minute one.
        let mut seen_short = false;
        for &b in &breakpoints {
            let ttl = blocks[b].breakpoint.unwrap_or(FIVE_MINUTES);
            if ttl == ONE_HOUR && seen_short {
                return Err(
                    "a cache_control block with ttl='1h' must not come after one with ttl='5m'"
                        .to_string(),
                );
            }
            seen_short |= ttl == FIVE_MINUTES;
        }

        let mut prefix = Vec::with_capacity(blocks.len());
        let mut sum = 0u64;
        for b in blocks {
            sum += b.tokens;
            prefix.push(sum);
        }
        let total = sum;

        let now = self.now();
        let mut hit: Option<usize> = None;
        for &b in &breakpoints {
            let lowest = b.saturating_sub(LOOKBACK_BLOCKS);
            if let Some(j) = (lowest..=b).rev().find(|&j| self.live(blocks[j].key, now)) {
                hit = Some(hit.map_or(j, |h: usize| h.max(j)));
            }
        }
        let read = hit.map_or(0, |h| prefix[h]);

        let mut writes = AnthropicWrites::default();
        if let Some(h) = hit {
            let ttl = self
                .entries
                .get(&blocks[h].key)
                .map_or(FIVE_MINUTES, |e| e.ttl);
            writes.entries.push((blocks[h].key, ttl));
        }
        let (mut creation_5m, mut creation_1h) = (0u64, 0u64);
        let mut covered = read;
        for &b in &breakpoints {
            if prefix[b] < min_cacheable_tokens {
                continue;
            }
            let ttl = blocks[b].breakpoint.unwrap_or(FIVE_MINUTES);
            writes.entries.push((blocks[b].key, ttl));
            if prefix[b] > covered {
                let added = prefix[b] - covered;
                if ttl == ONE_HOUR {
                    creation_1h += added;
                } else {
                    creation_5m += added;
                }
                covered = prefix[b];
            }
        }
        let creation = creation_5m + creation_1h;
        let usage = AnthropicUsage {
            outcome: CacheOutcome {
                read,
                creation,
                input: total - read - creation,
                hit_block: hit,
                breakpoints,
            },
            creation_5m,
            creation_1h,
        };
        Ok((usage, writes))
    }

    /// Makes a request's entries readable (and refreshes its hit): called
    /// when its response starts.
    pub fn commit(&mut self, writes: &AnthropicWrites) {
        let now = self.now();
        self.entries.retain(|_, e| e.expires > now);
        for &(key, ttl) in &writes.entries {
            let entry = self
                .entries
                .entry(key)
                .or_insert(Entry { ttl, expires: now });
            entry.ttl = entry.ttl.max(ttl);
            entry.expires = entry.expires.max(now + ttl);
        }
    }
}

/// Message-prefix keys of an OpenAI Chat Completions request: element `k` is
/// (key, tokens) of tools plus messages `0..=k`.
pub fn openai_prefixes(body: &Value) -> Vec<(u64, u64)> {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let mut key = seed("openai", model);
    let mut tokens = 0u64;
    if let Some(tools) = body.get("tools") {
        let bytes = serde_json::to_vec(tools).unwrap_or_default();
        key = fold(key, "tools", &bytes);
        tokens += tokens_of(bytes.len());
    }
    let mut out = Vec::new();
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for message in messages {
            let bytes = serde_json::to_vec(message).unwrap_or_default();
            key = fold(key, "message", &bytes);
            tokens += tokens_of(bytes.len());
            out.push((key, tokens));
        }
    }
    out
}

/// Prefixes an OpenAI request will make known once its response starts.
#[derive(Clone, Debug, Default)]
pub struct OpenAiWrites {
    keys: Vec<u64>,
}

/// OpenAI's automatic prefix cache: the longest previously seen message
/// prefix of at least the minimum length is reported as cached.
#[derive(Default)]
pub struct OpenAiCache {
    seen: HashMap<u64, Instant>,
    clock_offset: Duration,
}

impl OpenAiCache {
    fn now(&self) -> Instant {
        Instant::now() + self.clock_offset
    }

    pub fn advance(&mut self, by: Duration) {
        self.clock_offset += by;
    }

    pub fn clear(&mut self) {
        self.seen.clear();
    }

    pub fn plan(
        &self,
        prefixes: &[(u64, u64)],
        min_cached_tokens: u64,
    ) -> (CacheOutcome, OpenAiWrites) {
        let now = self.now();
        let total = prefixes.last().map_or(0, |p| p.1);
        let hit = prefixes
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (key, tokens))| {
                *tokens >= min_cached_tokens && self.seen.get(key).is_some_and(|t| *t > now)
            });
        let read = hit.map_or(0, |(_, p)| p.1);
        let writes = OpenAiWrites {
            keys: prefixes
                .iter()
                .filter(|p| p.1 >= min_cached_tokens)
                .map(|p| p.0)
                .collect(),
        };
        let outcome = CacheOutcome {
            read,
            creation: 0,
            input: total - read,
            hit_block: hit.map(|(i, _)| i),
            breakpoints: Vec::new(),
        };
        (outcome, writes)
    }

    pub fn commit(&mut self, writes: &OpenAiWrites) {
        let now = self.now();
        self.seen.retain(|_, t| *t > now);
        for key in &writes.keys {
            self.seen.insert(*key, now + OPENAI_TTL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A text block of exactly `4 * n` bytes once serialized (n tokens).
    fn block(tag: &str, tokens: usize) -> Value {
        let base = json!({"type": "text", "text": tag}).to_string().len();
        let pad = tokens * 4 - base;
        json!({"type": "text", "text": format!("{tag}{}", "x".repeat(pad))})
    }

    fn cached(mut v: Value) -> Value {
        v["cache_control"] = json!({"type": "ephemeral"});
        v
    }

    fn request(blocks: Vec<Value>) -> Value {
        json!({
            "model": "claude-test",
            "max_tokens": 100,
            "stream": true,
            "messages": [{"role": "user", "content": blocks}],
        })
    }

    /// Plans and commits, like a served request.
    fn serve(cache: &mut AnthropicCache, body: &Value, min: u64) -> CacheOutcome {
        let blocks = anthropic_blocks(body).unwrap();
        let (usage, writes) = cache.plan(&blocks, min).unwrap();
        cache.commit(&writes);
        usage.outcome
    }

    fn numbered(n: usize, tokens: usize) -> Vec<Value> {
        (0..n).map(|i| block(&format!("b{i}"), tokens)).collect()
    }

    #[test]
    fn tokens_round_up() {
        assert_eq!(tokens_of(0), 0);
        assert_eq!(tokens_of(1), 1);
        assert_eq!(tokens_of(4), 1);
        assert_eq!(tokens_of(5), 2);
        assert_eq!(block("a", 10).to_string().len(), 40);
    }

    #[test]
    fn keys_ignore_cache_control_but_not_bytes() {
        let plain = request(numbered(3, 10));
        let mut marked = plain.clone();
        marked["messages"][0]["content"][1] = cached(marked["messages"][0]["content"][1].clone());
        let a = anthropic_blocks(&plain).unwrap();
        let b = anthropic_blocks(&marked).unwrap();
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.key == y.key && x.tokens == y.tokens)
        );
        assert_eq!(b[1].breakpoint, Some(FIVE_MINUTES));

        // One byte changed early changes every later key.
        let mut changed = plain.clone();
        changed["messages"][0]["content"][0]["text"] = json!("b0xxxxxxxxxxxxxxxxxxxxxxxxxxxxxy");
        let c = anthropic_blocks(&changed).unwrap();
        assert!(a.iter().zip(&c).all(|(x, y)| x.key != y.key));

        // Key order is part of the bytes.
        let mut reordered = plain.clone();
        reordered["messages"][0]["content"][2] = json!({"text": a_text(&plain, 2), "type": "text"});
        let d = anthropic_blocks(&reordered).unwrap();
        assert_eq!(a[1].key, d[1].key);
        assert_ne!(a[2].key, d[2].key);

        // The model is part of every key.
        let mut other_model = plain.clone();
        other_model["model"] = json!("claude-other");
        let e = anthropic_blocks(&other_model).unwrap();
        assert_ne!(a[0].key, e[0].key);
    }

    fn a_text(v: &Value, i: usize) -> String {
        v["messages"][0]["content"][i]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn string_content_equals_one_text_block() {
        let a = json!({"model": "m", "system": "be brief", "messages": [{"role": "user", "content": "hi"}]});
        let b = json!({"model": "m", "system": [{"type": "text", "text": "be brief"}],
                       "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
        let ka: Vec<u64> = anthropic_blocks(&a)
            .unwrap()
            .iter()
            .map(|b| b.key)
            .collect();
        let kb: Vec<u64> = anthropic_blocks(&b)
            .unwrap()
            .iter()
            .map(|b| b.key)
            .collect();
        assert_eq!(ka, kb);
        assert_eq!(ka.len(), 2);
    }

    #[test]
    fn order_is_tools_system_messages_and_roles_matter() {
        let body = json!({
            "model": "m",
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            ],
        });
        assert_eq!(anthropic_blocks(&body).unwrap().len(), 4);
        // The same blocks split over two messages make other keys.
        let split = json!({
            "model": "m",
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "a"}]},
                {"role": "user", "content": [{"type": "text", "text": "b"}]},
            ],
        });
        let x = anthropic_blocks(&body).unwrap();
        let y = anthropic_blocks(&split).unwrap();
        assert_eq!(x[2].key, y[2].key);
        assert_ne!(x[3].key, y[3].key);
    }

    #[test]
    fn first_write_then_read_with_moved_breakpoint() {
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(6, 10);
        blocks[2] = cached(blocks[2].clone());
        let first = serve(&mut cache, &request(blocks), 0);
        assert_eq!(
            first,
            CacheOutcome {
                read: 0,
                creation: 30,
                input: 30,
                hit_block: None,
                breakpoints: vec![2]
            }
        );

        // Same prefix, breakpoint moved two blocks later: reads the first
        // three blocks, writes the next two.
        let mut blocks = numbered(6, 10);
        blocks[4] = cached(blocks[4].clone());
        let second = serve(&mut cache, &request(blocks), 0);
        assert_eq!(
            second,
            CacheOutcome {
                read: 30,
                creation: 20,
                input: 10,
                hit_block: Some(2),
                breakpoints: vec![4]
            }
        );

        // And again: the whole prefix up to block 4 is read.
        let mut blocks = numbered(6, 10);
        blocks[4] = cached(blocks[4].clone());
        let third = serve(&mut cache, &request(blocks), 0);
        assert_eq!((third.read, third.creation, third.input), (50, 0, 10));
    }

    #[test]
    fn early_byte_change_misses() {
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(4, 10);
        blocks[3] = cached(blocks[3].clone());
        serve(&mut cache, &request(blocks.clone()), 0);
        blocks[0] = block("B0", 10);
        let out = serve(&mut cache, &request(blocks), 0);
        assert_eq!((out.read, out.creation), (0, 40));
    }

    #[test]
    fn too_many_breakpoints() {
        let cache = AnthropicCache::default();
        let blocks: Vec<Value> = numbered(5, 10).into_iter().map(cached).collect();
        let err = cache
            .plan(&anthropic_blocks(&request(blocks)).unwrap(), 0)
            .unwrap_err();
        assert!(
            err.contains("maximum of 4") && err.contains("Found 5"),
            "{err}"
        );
        let blocks: Vec<Value> = numbered(4, 10).into_iter().map(cached).collect();
        assert!(
            cache
                .plan(&anthropic_blocks(&request(blocks)).unwrap(), 0)
                .is_ok()
        );
    }

    #[test]
    fn bad_cache_control() {
        let mut b = block("a", 10);
        b["cache_control"] = json!({"type": "persistent"});
        assert!(anthropic_blocks(&request(vec![b.clone()])).is_err());
        b["cache_control"] = json!({"type": "ephemeral", "ttl": "2h"});
        assert!(anthropic_blocks(&request(vec![b])).is_err());
        // 1h after 5m is refused; 5m after 1h is fine.
        let mut one_hour = block("h", 10);
        one_hour["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        let five = cached(block("f", 10));
        let cache = AnthropicCache::default();
        let bad = anthropic_blocks(&request(vec![five.clone(), one_hour.clone()])).unwrap();
        assert!(cache.plan(&bad, 0).is_err());
        let good = anthropic_blocks(&request(vec![one_hour, five])).unwrap();
        assert!(cache.plan(&good, 0).is_ok());
    }

    #[test]
    fn lookback_is_twenty_blocks() {
        for (distance, found) in [(20usize, true), (21, false)] {
            let mut cache = AnthropicCache::default();
            let mut blocks = numbered(30, 10);
            blocks[2] = cached(blocks[2].clone());
            serve(&mut cache, &request(blocks), 0);

            let mut blocks = numbered(30, 10);
            blocks[2 + distance] = cached(blocks[2 + distance].clone());
            let out = serve(&mut cache, &request(blocks), 0);
            if found {
                assert_eq!(out.hit_block, Some(2), "distance {distance}");
                assert_eq!(out.read, 30);
            } else {
                assert_eq!(out.hit_block, None, "distance {distance}");
                assert_eq!(out.read, 0);
                assert_eq!(out.creation, (3 + distance as u64) * 10);
            }
        }
    }

    #[test]
    fn an_intermediate_breakpoint_extends_the_lookback() {
        // Entry at 2; new request has breakpoints at 10 and 30: the one at
        // 10 finds it, the one at 30 would not.
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(31, 10);
        blocks[2] = cached(blocks[2].clone());
        serve(&mut cache, &request(blocks), 0);
        let mut blocks = numbered(31, 10);
        blocks[10] = cached(blocks[10].clone());
        blocks[30] = cached(blocks[30].clone());
        let out = serve(&mut cache, &request(blocks), 0);
        assert_eq!(out.hit_block, Some(2));
        assert_eq!((out.read, out.creation, out.input), (30, 280, 0));
    }

    #[test]
    fn longest_hit_over_all_breakpoints() {
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(8, 10);
        blocks[1] = cached(blocks[1].clone());
        blocks[5] = cached(blocks[5].clone());
        let first = serve(&mut cache, &request(blocks.clone()), 0);
        assert_eq!((first.read, first.creation), (0, 60));
        let again = serve(&mut cache, &request(blocks), 0);
        assert_eq!(again.hit_block, Some(5));
        assert_eq!((again.read, again.creation, again.input), (60, 0, 20));
    }

    #[test]
    fn minimum_cacheable_length() {
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(3, 10);
        blocks[1] = cached(blocks[1].clone());
        // Prefix at the breakpoint is 20 tokens: below a minimum of 21.
        let out = serve(&mut cache, &request(blocks.clone()), 21);
        assert_eq!((out.read, out.creation, out.input), (0, 0, 30));
        let out = serve(&mut cache, &request(blocks.clone()), 21);
        assert_eq!(out.read, 0);
        // Exactly the minimum is cached.
        let out = serve(&mut cache, &request(blocks.clone()), 20);
        assert_eq!(out.creation, 20);
        let out = serve(&mut cache, &request(blocks), 20);
        assert_eq!(out.read, 20);
    }

    #[test]
    fn uncommitted_entries_are_invisible_and_ttl_expires() {
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(3, 10);
        blocks[2] = cached(blocks[2].clone());
        let parsed = anthropic_blocks(&request(blocks)).unwrap();
        let (first, writes) = cache.plan(&parsed, 0).unwrap();
        let (second, _) = cache.plan(&parsed, 0).unwrap();
        assert_eq!(first.outcome.creation, 30);
        assert_eq!(second.outcome.creation, 30);
        cache.commit(&writes);
        let (third, writes) = cache.plan(&parsed, 0).unwrap();
        assert_eq!(third.outcome.read, 30);
        cache.commit(&writes);

        cache.advance(Duration::from_secs(4 * 60));
        // A read refreshes the entry.
        let (fourth, writes) = cache.plan(&parsed, 0).unwrap();
        assert_eq!(fourth.outcome.read, 30);
        cache.commit(&writes);
        cache.advance(Duration::from_secs(4 * 60));
        assert_eq!(cache.plan(&parsed, 0).unwrap().0.outcome.read, 30);
        cache.advance(Duration::from_secs(6 * 60));
        assert_eq!(cache.plan(&parsed, 0).unwrap().0.outcome.read, 0);
    }

    #[test]
    fn one_hour_ttl_and_creation_split() {
        let mut cache = AnthropicCache::default();
        let mut blocks = numbered(4, 10);
        blocks[1]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        blocks[3] = cached(blocks[3].clone());
        let parsed = anthropic_blocks(&request(blocks)).unwrap();
        let (usage, writes) = cache.plan(&parsed, 0).unwrap();
        assert_eq!((usage.creation_1h, usage.creation_5m), (20, 20));
        cache.commit(&writes);
        cache.advance(Duration::from_secs(30 * 60));
        let (usage, _) = cache.plan(&parsed, 0).unwrap();
        assert_eq!(usage.outcome.hit_block, Some(1));
        assert_eq!(
            (usage.outcome.read, usage.creation_5m, usage.creation_1h),
            (20, 20, 0)
        );
    }

    #[test]
    fn openai_prefix_cache() {
        let mut cache = OpenAiCache::default();
        let body = json!({"model": "gpt", "messages": [
            {"role": "system", "content": "s".repeat(400)},
            {"role": "user", "content": "hello"},
        ]});
        let prefixes = openai_prefixes(&body);
        assert_eq!(prefixes.len(), 2);
        let (first, writes) = cache.plan(&prefixes, 50);
        assert_eq!(first.read, 0);
        cache.commit(&writes);

        let longer = json!({"model": "gpt", "messages": [
            {"role": "system", "content": "s".repeat(400)},
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "again"},
        ]});
        let p2 = openai_prefixes(&longer);
        let (second, _) = cache.plan(&p2, 50);
        assert_eq!(second.hit_block, Some(1));
        assert_eq!(second.read, prefixes[1].1);
        assert_eq!(second.input, p2[3].1 - prefixes[1].1);
        // Below the minimum nothing counts.
        let (third, _) = cache.plan(&p2, 10_000);
        assert_eq!(third.read, 0);
    }
}

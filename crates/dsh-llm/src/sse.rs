//! A server-sent events decoder that is fed bytes as they arrive.
//!
//! It follows the WHATWG event-stream rules that matter to model APIs: lines end with `\n`,
//! `\r\n` or `\r`; `data:` lines accumulate (joined by `\n`); a blank line dispatches the event;
//! lines starting with `:` are comments (servers send them as keep-alives); a field name without
//! a colon has an empty value. Bytes are buffered until a line is complete, so a UTF-8 sequence
//! or a line split across network reads is reassembled.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the server named the event.
    pub event: Option<String>,
    pub data: String,
}

/// What a chunk of input produced.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub events: Vec<SseEvent>,
    /// Comment lines seen (keep-alives): proof the connection is alive.
    pub comments: usize,
}

#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    /// A `\r` ended the last line; a `\n` right after it belongs to the same line end.
    pending_cr: bool,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Decoded {
        let mut out = Decoded::default();
        for &byte in bytes {
            if self.pending_cr {
                self.pending_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.pending_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.buffer.push(byte),
            }
        }
        out
    }

    /// Ends the stream: an event still being collected is dispatched, as a blank line would.
    pub fn finish(&mut self) -> Decoded {
        let mut out = Decoded::default();
        if !self.buffer.is_empty() {
            self.end_line(&mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn end_line(&mut self, out: &mut Decoded) {
        let line = std::mem::take(&mut self.buffer);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        let line = String::from_utf8_lossy(&line);
        if line.starts_with(':') {
            out.comments += 1;
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            // `id` and `retry` steer reconnection, which a model request never does.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Decoded) {
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        out.events.push(SseEvent { event, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn splits_events_on_blank_lines() {
        let mut decoder = SseDecoder::new();
        let out = decoder.feed(b"data: {\"a\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(data(&out.events), vec!["{\"a\":1}", "[DONE]"]);
    }

    #[test]
    fn reassembles_lines_and_characters_split_across_reads() {
        let mut decoder = SseDecoder::new();
        let bytes = "data: h\u{e9}llo\r\n\r\n".as_bytes();
        let mut events = Vec::new();
        for chunk in bytes.chunks(1) {
            events.extend(decoder.feed(chunk).events);
        }
        assert_eq!(data(&events), vec!["h\u{e9}llo"]);
    }

    #[test]
    fn joins_multi_line_data_and_keeps_event_names() {
        let mut decoder = SseDecoder::new();
        let out = decoder.feed(b"event: message_start\ndata: a\ndata: b\n\n");
        assert_eq!(
            out.events,
            vec![SseEvent {
                event: Some("message_start".into()),
                data: "a\nb".into()
            }]
        );
    }

    #[test]
    fn counts_comments_and_ignores_other_fields() {
        let mut decoder = SseDecoder::new();
        let out = decoder.feed(b": keep-alive\nid: 4\nretry: 10\n\n");
        assert_eq!(out.comments, 1);
        assert!(out.events.is_empty());
    }

    #[test]
    fn finish_dispatches_an_unterminated_event() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.feed(b"data: tail").events.is_empty());
        assert_eq!(data(&decoder.finish().events), vec!["tail"]);
    }

    #[test]
    fn accepts_bare_carriage_returns() {
        let mut decoder = SseDecoder::new();
        let out = decoder.feed(b"data:x\r\rdata:y\r\r");
        assert_eq!(data(&out.events), vec!["x", "y"]);
    }
}

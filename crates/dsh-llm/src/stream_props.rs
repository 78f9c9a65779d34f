//! Properties of stream decoding, checked on generated input: the SSE decoder and each
//! dialect's assembler give the same answer however the network cuts the bytes, and no input
//! makes them panic. The streams are the scripted server's own (`dsh_testkit::stream_body`),
//! so they are what the other tests send over loopback. Cases: proptest's default (256), or
//! `PROPTEST_CASES` (`scripts/fuzz` runs many more).

use proptest::prelude::*;

use crate::http::StreamedAnswer;
use crate::sse::{Decoded, SseDecoder};
use crate::{Completion, StreamDelta};
use dsh_testkit::{Answer, Dialect, stream_body};

/// Feeds `bytes` to a decoder in the pieces `cuts` makes (offsets, any order, any count).
fn decode(bytes: &[u8], cuts: &[usize]) -> Decoded {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut decoder = SseDecoder::new();
    let mut all = Decoded::default();
    let mut from = 0;
    for to in points.into_iter().chain([bytes.len()]) {
        let out = decoder.feed(&bytes[from..to.max(from)]);
        all.events.extend(out.events);
        all.comments += out.comments;
        from = to.max(from);
    }
    let out = decoder.finish();
    all.events.extend(out.events);
    all.comments += out.comments;
    all
}

/// What an assembler made of a stream: the answer, the error it stopped at, or nothing (the
/// stream ended before its end marker).
fn assemble<A: StreamedAnswer + Default>(
    bytes: &[u8],
    cuts: &[usize],
) -> Option<Result<Completion, dsh_protocol::Failure>> {
    let mut answer = A::default();
    let mut ignore = |_: StreamDelta| {};
    let mut sink: crate::DeltaSink<'_> = &mut ignore;
    for event in decode(bytes, cuts).events {
        match answer.event(&event.data, &mut sink) {
            Ok(Some(done)) => return Some(Ok(done)),
            Ok(None) => {}
            Err(error) => return Some(Err(error.failure)),
        }
    }
    None
}

fn assemble_in(
    dialect: Dialect,
    bytes: &[u8],
    cuts: &[usize],
) -> Option<Result<Completion, dsh_protocol::Failure>> {
    match dialect {
        Dialect::Chat => assemble::<crate::chat_completions::ChatAssembler>(bytes, cuts),
        Dialect::Messages => assemble::<crate::anthropic_messages::Assembler>(bytes, cuts),
        Dialect::Responses => assemble::<crate::openai_responses::Assembler>(bytes, cuts),
    }
}

const DIALECTS: [Dialect; 3] = [Dialect::Chat, Dialect::Messages, Dialect::Responses];

/// Text as models write it: words, punctuation, JSON-looking pieces, line ends of every
/// kind, SSE field names, and characters of every width.
fn model_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            "[a-zA-Z0-9 .,]{1,12}",
            Just("\n".to_owned()),
            Just("\r\n".to_owned()),
            Just("\r".to_owned()),
            Just("data: ".to_owned()),
            Just(": ping".to_owned()),
            Just("{\"a\": [1, \"b\"]}".to_owned()),
            Just("é€𝄞🦀".to_owned()),
            Just("\\\"\t".to_owned()),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

fn answer() -> impl Strategy<Value = Answer> {
    let call = ("[a-z_]{1,10}", model_text())
        .prop_map(|(name, value)| (name, serde_json::json!({ "value": value }).to_string()));
    (
        model_text(),
        proptest::option::of(model_text().prop_filter("reasoning has text", |r| !r.is_empty())),
        proptest::collection::vec(call, 0..3),
    )
        .prop_map(|(text, reasoning, tool_calls)| Answer {
            text,
            reasoning,
            tool_calls,
            usage: Some((100, 10, 0)),
            finish: None,
            wire_usage: None,
        })
        // An answer with nothing in it is a failure of its own (tested elsewhere).
        .prop_filter("the answer says something", |a| {
            !a.text.is_empty() || a.reasoning.is_some() || !a.tool_calls.is_empty()
        })
}

proptest! {
    #[test]
    fn the_decoder_gives_the_same_events_however_the_bytes_are_cut(
        bytes in proptest::collection::vec(
            prop_oneof![
                Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), Just(b'a'),
                Just(b't'), Just(0xE2u8), Just(0x82u8), Just(0xACu8), any::<u8>(),
            ],
            0..400,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        prop_assert_eq!(decode(&bytes, &cuts), decode(&bytes, &[]));
        dsh_testkit::fault_matrix(
            "hostile input",
            "arbitrary bytes as an event stream, cut anywhere",
            "the same (mostly no) events however cut; no panic",
        );
    }

    #[test]
    fn event_lines_with_any_line_endings_decode_the_same_however_cut(
        lines in proptest::collection::vec(
            (
                prop_oneof![
                    model_text().prop_map(|t| format!("data: {}", t.replace(['\r', '\n'], " "))),
                    "[a-z]{0,8}".prop_map(|t| format!("data:{t}")),
                    "[a-z_.]{1,12}".prop_map(|t| format!("event: {t}")),
                    Just(": keep-alive".to_owned()),
                    Just(String::new()),
                    Just("id: 7".to_owned()),
                    Just("data".to_owned()),
                ],
                prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
            ),
            0..24,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let bytes: String = lines.iter().map(|(line, end)| format!("{line}{end}")).collect();
        let whole = decode(bytes.as_bytes(), &[]);
        prop_assert_eq!(decode(bytes.as_bytes(), &cuts), whole);
        dsh_testkit::fault_matrix(
            "hostile input",
            "event-stream lines with any line endings, cut anywhere",
            "the same events however cut",
        );
    }

    #[test]
    fn every_dialect_assembles_the_same_answer_however_the_stream_is_cut(
        answer in answer(),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        for dialect in DIALECTS {
            let bytes = stream_body(&answer, dialect);
            let whole = assemble_in(dialect, &bytes, &[]);
            let Some(Ok(done)) = &whole else {
                return Err(TestCaseError::fail(format!("{dialect:?}: {whole:?}")));
            };
            prop_assert_eq!(&done.message.text(), &answer.text, "{:?}", dialect);
            let calls: Vec<(String, String)> = done
                .message
                .content
                .iter()
                .filter_map(|block| match block {
                    dsh_protocol::Block::ToolCall { name, arguments, .. } => {
                        Some((name.clone(), arguments.clone()))
                    }
                    _ => None,
                })
                .collect();
            prop_assert_eq!(&calls, &answer.tool_calls, "{:?}", dialect);
            prop_assert_eq!(assemble_in(dialect, &bytes, &cuts), whole, "{:?}", dialect);
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "a model's stream in each dialect, cut anywhere",
            "the same answer however cut",
        );
    }

    #[test]
    fn no_event_data_makes_an_assembler_panic(
        events in proptest::collection::vec(
            prop_oneof![
                any::<String>(),
                model_text(),
                Just("[DONE]".to_owned()),
                Just("{\"type\":\"message_stop\"}".to_owned()),
                Just("{\"type\":\"response.completed\",\"response\":{}}".to_owned()),
                Just("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":9}]}}]}".to_owned()),
                Just("{\"type\":\"content_block_delta\",\"index\":7,\"delta\":{}}".to_owned()),
                Just("{\"type\":\"response.output_item.added\",\"item\":{}}".to_owned()),
            ],
            0..12,
        ),
    ) {
        let body: String = events.iter().map(|data| format!("data: {data}\n\n")).collect();
        for dialect in DIALECTS {
            // Any outcome is fine; a panic fails the case.
            let _ = assemble_in(dialect, body.as_bytes(), &[]);
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "arbitrary event data in each dialect",
            "no panic",
        );
    }
}

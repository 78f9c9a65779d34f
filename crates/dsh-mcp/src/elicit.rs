//! A server's question for the user (MCP elicitation): put to whoever answers this run's
//! questions as a form, the answer checked against the form before it goes back. A run with
//! no one to ask (headless) never declares the capability; a server that asks anyway is
//! declined, and the user hears of it in a notice (a few a minute, then how many were held
//! back). One question per server at a time: a server cannot pile forms up in front of the
//! user.

use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

use dsh_tools::{Elicitation, ElicitationAnswer, Form};

use crate::link::Link;
use crate::oauth::printable;

/// The longest message shown; a longer one is cut.
const MESSAGE_CHARS: usize = 4000;
/// How much of a message a notice quotes.
const QUOTED_CHARS: usize = 200;

/// How many notices of declined questions are shown in each [`DECLINED_WINDOW`]: a server may
/// ask without end where no one can answer (headless), or while a question is open.
pub(crate) const DECLINED_SHOWN: u32 = 5;
pub(crate) const DECLINED_WINDOW: Duration = Duration::from_secs(60);

/// The answer to `request`, asked by the server of `link`.
pub(crate) async fn answer(link: &Link, request: ElicitRequestParams) -> ElicitResult {
    let server = &link.server.name;
    let declined = |why: String| {
        let line = format!("mcp {server}: {why}; declined");
        let shown = (link.declined.lock())
            .unwrap_or_else(PoisonError::into_inner)
            .pass(line, Instant::now());
        for notice in shown {
            let _ = link.notices.send(notice);
        }
        ElicitResult::new(ElicitationAction::Decline)
    };
    let (message, schema) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            serde_json::to_value(requested_schema).unwrap_or_default(),
        ),
        ElicitRequestParams::UrlElicitationParams { message, .. } => {
            return declined(format!(
                "asked to send you to a web page (\"{}\"), which dsh does not do",
                cut(&message, QUOTED_CHARS)
            ));
        }
        _ => return declined("asked a kind of question dsh does not know".into()),
    };
    let Some(questions) = (link.attached.questions.as_deref()).filter(|q| q.can_elicit()) else {
        return declined(format!(
            "asked a question (\"{}\") and no one can answer it here",
            cut(&message, QUOTED_CHARS)
        ));
    };
    let form = match Form::from_schema(&schema) {
        Ok(form) => form,
        Err(why) => return declined(format!("asked a question dsh cannot show ({why})")),
    };
    if link
        .questions_open
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return declined("asked a second question while one is open".into());
    }
    let request = Elicitation {
        server: server.clone(),
        message: cut(&message, MESSAGE_CHARS),
        form: form.clone(),
        schema,
    };
    let answer = questions.elicit(request).await;
    link.questions_answered.fetch_add(1, Ordering::SeqCst);
    link.questions_open.store(0, Ordering::SeqCst);
    link.question_done.notify_waiters();
    match answer {
        ElicitationAnswer::Accept(given) => match form.check(&given) {
            Ok(content) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::Value::Object(content)),
            Err(why) => declined(format!("the answer to its question was not valid ({why})")),
        },
        ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// `text` made printable and cut to `chars` characters.
fn cut(text: &str, chars: usize) -> String {
    let shown = printable(text);
    match shown.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &shown[..at]),
        None => shown,
    }
}

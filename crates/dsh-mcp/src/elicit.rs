//! A server's question for the user (MCP elicitation): put to whoever answers this run's
//! questions as a form, the answer checked against the form before it goes back. A run with
//! no one to ask (headless) never declares the capability; a server that asks anyway is
//! declined, and the user hears of it in a notice.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use tokio::sync::mpsc::UnboundedSender;

use dsh_tools::{Elicitation, ElicitationAnswer, Form, UserQuestions};

/// The answer to `request` from server `server`.
pub(crate) async fn answer(
    server: &str,
    questions: Option<&dyn UserQuestions>,
    notices: &UnboundedSender<String>,
    request: ElicitRequestParams,
) -> ElicitResult {
    let declined = |why: String| {
        let _ = notices.send(format!("mcp {server}: {why}; declined"));
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
                "asked to send you to a web page (\"{message}\"), which dsh does not do"
            ));
        }
        _ => return declined("asked a kind of question dsh does not know".into()),
    };
    let Some(questions) = questions.filter(|q| q.can_elicit()) else {
        return declined(format!(
            "asked a question (\"{message}\") and no one can answer it here"
        ));
    };
    let form = match Form::from_schema(&schema) {
        Ok(form) => form,
        Err(why) => return declined(format!("asked a question dsh cannot show ({why})")),
    };
    let request = Elicitation {
        server: server.to_owned(),
        message,
        form: form.clone(),
        schema,
    };
    match questions.elicit(request).await {
        ElicitationAnswer::Accept(given) => match form.check(&given) {
            Ok(content) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::Value::Object(content)),
            Err(why) => declined(format!("the answer to its question was not valid ({why})")),
        },
        ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

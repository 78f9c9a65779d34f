//! What a run asks of the person at its front end: an escalation or a network exception to
//! approve, the model's questions (`ask_user_question`), an MCP server's form. Each arrives as
//! a [`Request`] on the channel [`User::asking`] hands the front end, which answers it in its
//! own event loop, in its own way (a dialog, a page, an editor's permission request), through
//! the request's methods. Those methods are the one place that decides what an answer means;
//! a front end implements no trait and never builds an outcome itself.
//!
//! A request dropped unanswered is a cancellation, so a front end that closes answers every
//! question it held. One the run stopped waiting for (a stopped turn, a cancelled call) says so
//! ([`Reply::withdrawn`]), for the front end to take it off the screen.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalRequest, Approver, SessionGrants};
use dsh_tools::{Answer, AskOutcome, Elicitation, ElicitationAnswer, Question, UserQuestions};
use tokio::sync::{mpsc, oneshot};

use crate::User;

/// Something the run waits for the person to answer.
pub enum Request {
    Approval(Approval),
    Questions(Questions),
    /// An MCP server's form (elicitation).
    Form(FormRequest),
}

/// How a front end takes requests, given to [`User::asking`].
#[derive(Clone, Default)]
pub struct Asking {
    /// It can show an MCP server's form: only then do the run's MCP servers hear that dsh
    /// takes their questions.
    pub forms: bool,
    /// It shows a running command's output as it arrives ([`crate::AgentEvent::ToolOutput`]).
    pub watches_output: bool,
    /// The editor whose files `read`, `edit` and `write` go through (an ACP client that
    /// offers its file system); none: the disk.
    pub editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
}

impl User {
    /// A person at a front end, who is asked through the returned [`Requests`]. Clones of
    /// the user (one per run the front end builds) ask through the same channel and share
    /// what was allowed for the session ([`Requests::grants`]).
    pub fn asking(asking: Asking) -> (User, Requests) {
        let (tx, rx) = mpsc::unbounded_channel();
        let channel = Channel {
            tx,
            forms: asking.forms,
        };
        let grants = Arc::new(SessionGrants::new(channel.clone()));
        let user = User {
            approver: Some(grants.clone()),
            questions: Some(Arc::new(channel)),
            watches_output: asking.watches_output,
            editor: asking.editor,
            host_tools: None,
        };
        let grants = Arc::downgrade(&grants);
        (user, Requests { rx, grants })
    }
}

/// The requests of a [`User::asking`]'s runs, in the order they were asked.
pub struct Requests {
    rx: mpsc::UnboundedReceiver<Request>,
    /// Held by the user's runs, not here: the grants hold the channel's sending end.
    grants: Weak<SessionGrants<Channel>>,
}

impl Requests {
    /// The next request; `None` once every run of the user is gone. Cancel-safe, for a
    /// `select!` beside the front end's other sources.
    pub async fn recv(&mut self) -> Option<Request> {
        self.rx.recv().await
    }

    /// What was allowed for the session, which a front end shows and forgets.
    pub fn grants(&self) -> Grants {
        Grants(self.grants.clone())
    }
}

/// What was allowed "for the session" so far: such a request is allowed again without asking.
/// Nothing once the user is gone.
#[derive(Clone)]
pub struct Grants(Weak<SessionGrants<Channel>>);

impl Grants {
    /// The grants allowed so far, sorted (`/status`).
    pub fn granted(&self) -> Vec<String> {
        (self.0.upgrade()).map_or_else(Vec::new, |grants| grants.granted())
    }

    /// Forgets them: another session starts asking again.
    pub fn forget(&self) {
        if let Some(grants) = self.0.upgrade() {
            grants.clear();
        }
    }
}

/// Where one request's answer goes.
pub struct Reply<T>(oneshot::Sender<T>);

impl<T> Reply<T> {
    fn send(self, answer: T) {
        // The run stopped waiting: the answer has nobody to go to, which is no failure.
        let _ = self.0.send(answer);
    }

    /// Whether the run stopped waiting for the answer (the call was stopped).
    pub fn is_withdrawn(&self) -> bool {
        self.0.is_closed()
    }

    /// Waits until the run stops waiting for the answer.
    pub async fn withdrawn(&mut self) {
        self.0.closed().await;
    }
}

/// An approval's choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// This call, this once.
    Once,
    /// Everything the request's grant covers, for the rest of the session.
    Session,
    /// No; the model reads the reason given with it.
    Deny,
}

/// A call that needs the person's yes: a wider sandbox, the network, a call the review
/// refused.
pub struct Approval {
    pub request: ApprovalRequest,
    pub reply: Reply<ApprovalOutcome>,
}

impl Approval {
    /// The request, and where its outcome arrives (a front end's tests ask this way).
    pub fn new(request: ApprovalRequest) -> (Self, oneshot::Receiver<ApprovalOutcome>) {
        let (tx, rx) = oneshot::channel();
        (
            Approval {
                request,
                reply: Reply(tx),
            },
            rx,
        )
    }

    /// What the person may answer, in the order to offer it: "for the session" only when
    /// the request names what it would cover.
    pub fn choices(&self) -> &'static [Choice] {
        match self.request.grant {
            Some(_) => &[Choice::Once, Choice::Session, Choice::Deny],
            None => &[Choice::Once, Choice::Deny],
        }
    }

    /// Answers with `choice`; `reason` is what the person said with a denial (blank: none).
    /// A choice the request does not offer is no answer: it is cancelled.
    pub fn answer(self, choice: Choice, reason: Option<&str>) {
        let outcome = match choice {
            _ if !self.choices().contains(&choice) => ApprovalOutcome::Cancelled,
            Choice::Once => ApprovalOutcome::AllowedOnce,
            Choice::Session => ApprovalOutcome::AllowedForSession,
            Choice::Deny => ApprovalOutcome::Rejected {
                reason: said(reason),
            },
        };
        self.reply.send(outcome);
    }

    /// The person closed it without answering.
    pub fn cancel(self) {
        self.reply.send(ApprovalOutcome::Cancelled);
    }

    /// Nobody could be asked (the editor's connection failed): the call is refused as in a
    /// run with no one to ask.
    pub fn unavailable(self) {
        self.reply.send(ApprovalOutcome::Unavailable);
    }
}

/// The model's questions, asked by the `ask_user_question` call `call_id`.
pub struct Questions {
    pub call_id: String,
    pub questions: Vec<Question>,
    pub reply: Reply<AskOutcome>,
}

impl Questions {
    /// The questions, and where their outcome arrives.
    pub fn new(call_id: &str, questions: Vec<Question>) -> (Self, oneshot::Receiver<AskOutcome>) {
        let (tx, rx) = oneshot::channel();
        let call_id = call_id.to_owned();
        let asked = Questions {
            call_id,
            questions,
            reply: Reply(tx),
        };
        (asked, rx)
    }

    /// Answers the questions: one answer each, in the questions' order, whatever `answers`
    /// holds. A label that is none of a question's options is dropped, own words are trimmed
    /// and blank ones dropped; a question with no answer, or nothing left of it, is skipped.
    pub fn answer(self, answers: Vec<Answer>) {
        let answers = (self.questions.iter())
            .map(|question| {
                let given = answers.iter().find(|a| a.id == question.id);
                Answer {
                    id: question.id.clone(),
                    selected: given
                        .map(|a| {
                            (a.selected.iter())
                                .filter(|label| question.options.iter().any(|o| o.label == **label))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default(),
                    custom: given.and_then(|a| said(a.custom.as_deref())),
                }
            })
            .collect();
        self.reply.send(AskOutcome::Answered(answers));
    }

    /// The person closed the questions without answering.
    pub fn cancel(self) {
        self.reply.send(AskOutcome::Cancelled);
    }
}

/// An MCP server's form. Its fields are checked against the form again before they go back.
pub struct FormRequest {
    pub form: Elicitation,
    pub reply: Reply<ElicitationAnswer>,
}

impl FormRequest {
    /// The form, and where its answer arrives.
    pub fn new(form: Elicitation) -> (Self, oneshot::Receiver<ElicitationAnswer>) {
        let (tx, rx) = oneshot::channel();
        (
            FormRequest {
                form,
                reply: Reply(tx),
            },
            rx,
        )
    }

    /// The form, filled in: each field's value by its name.
    pub fn accept(self, content: serde_json::Map<String, serde_json::Value>) {
        self.reply.send(ElicitationAnswer::Accept(content));
    }

    /// The person said no.
    pub fn decline(self) {
        self.reply.send(ElicitationAnswer::Decline);
    }

    /// The person closed it without answering.
    pub fn cancel(self) {
        self.reply.send(ElicitationAnswer::Cancel);
    }
}

/// Text the person typed, trimmed; `None` when blank.
fn said(text: Option<&str>) -> Option<String> {
    Some(text?.trim())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// The run's side: what the agent asks becomes a request on the channel.
#[derive(Clone)]
struct Channel {
    tx: mpsc::UnboundedSender<Request>,
    forms: bool,
}

impl Channel {
    /// Sends `request` and waits for its answer on `answered`: `gone` when nobody reads
    /// requests any more, `unanswered` when the request was dropped.
    async fn ask<T>(
        &self,
        (request, answered): (Request, oneshot::Receiver<T>),
        gone: T,
        unanswered: T,
    ) -> T {
        // What the agent reported before it asked (the call a request is about, above all)
        // reaches the front end first: a front end that reads events before it polls the
        // run again has taken them in once the run has given way once.
        tokio::task::yield_now().await;
        if self.tx.send(request).is_err() {
            return gone;
        }
        answered.await.unwrap_or(unanswered)
    }
}

impl Approver for Channel {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
        let (approval, answered) = Approval::new(request);
        Box::pin(self.ask(
            (Request::Approval(approval), answered),
            ApprovalOutcome::Unavailable,
            ApprovalOutcome::Cancelled,
        ))
    }
}

impl UserQuestions for Channel {
    fn ask(
        &self,
        call_id: &str,
        questions: Vec<Question>,
    ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>> {
        let (questions, answered) = Questions::new(call_id, questions);
        Box::pin(Channel::ask(
            self,
            (Request::Questions(questions), answered),
            AskOutcome::Cancelled,
            AskOutcome::Cancelled,
        ))
    }

    fn can_elicit(&self) -> bool {
        self.forms
    }

    fn elicit(
        &self,
        form: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        let (form, answered) = FormRequest::new(form);
        Box::pin(self.ask(
            (Request::Form(form), answered),
            ElicitationAnswer::Cancel,
            ElicitationAnswer::Cancel,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_tools::QuestionOption;

    fn approval(grant: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            tool: "bash".into(),
            call_id: "c1".into(),
            reason: "escalate sandbox to danger-full-access: needed".into(),
            grant: grant.map(str::to_owned),
        }
    }

    /// Asks `request` through a user's channel and answers it with `answer`.
    async fn approved(
        request: ApprovalRequest,
        answer: impl FnOnce(Approval) + Send + 'static,
    ) -> ApprovalOutcome {
        let (user, mut requests) = User::asking(Asking::default());
        let answering = tokio::spawn(async move {
            if let Some(Request::Approval(approval)) = requests.recv().await {
                answer(approval);
            }
            requests
        });
        let approver = user.approver.clone().unwrap();
        let outcome = approver.request(request).await;
        drop((user, answering.await.unwrap()));
        outcome
    }

    #[tokio::test]
    async fn an_approval_means_what_its_choice_says() {
        let once = approved(approval(Some("network")), |a| a.answer(Choice::Once, None));
        assert_eq!(once.await, ApprovalOutcome::AllowedOnce);
        let session = |a: Approval| a.answer(Choice::Session, Some("ignored"));
        let session = approved(approval(Some("network")), session);
        assert_eq!(session.await, ApprovalOutcome::AllowedForSession);
        let deny = |a: Approval| a.answer(Choice::Deny, Some("  not now "));
        let deny = approved(approval(None), deny);
        let reason = Some("not now".to_owned());
        assert_eq!(deny.await, ApprovalOutcome::Rejected { reason });
        let blank = approved(approval(None), |a| a.answer(Choice::Deny, Some("  ")));
        assert_eq!(blank.await, ApprovalOutcome::Rejected { reason: None });
        // "For the session" where the request names no grant is not offered: no answer.
        assert_eq!(approval_choices(None), [Choice::Once, Choice::Deny]);
        let session = approved(approval(None), |a| a.answer(Choice::Session, None));
        assert_eq!(session.await, ApprovalOutcome::Cancelled);
        let dropped = approved(approval(None), drop);
        assert_eq!(dropped.await, ApprovalOutcome::Cancelled);
        let unavailable = approved(approval(None), Approval::unavailable);
        assert_eq!(unavailable.await, ApprovalOutcome::Unavailable);
    }

    fn approval_choices(grant: Option<&str>) -> Vec<Choice> {
        Approval::new(approval(grant)).0.choices().to_vec()
    }

    #[tokio::test]
    async fn nobody_reading_requests_is_nobody_to_ask() {
        let (user, requests) = User::asking(Asking::default());
        drop(requests);
        let approver = user.approver.clone().unwrap();
        let outcome = approver.request(approval(None)).await;
        assert_eq!(outcome, ApprovalOutcome::Unavailable);
    }

    #[tokio::test]
    async fn what_is_allowed_for_the_session_is_asked_once_and_can_be_forgotten() {
        let (user, mut requests) = User::asking(Asking::default());
        let grants = requests.grants();
        let answering = tokio::spawn(async move {
            let mut asked = 0;
            while let Some(Request::Approval(approval)) = requests.recv().await {
                asked += 1;
                approval.answer(Choice::Session, None);
            }
            asked
        });
        let approver = user.approver.clone().unwrap();
        for _ in 0..2 {
            let outcome = approver.request(approval(Some("network"))).await;
            assert!(outcome != ApprovalOutcome::Cancelled, "{outcome:?}");
        }
        assert_eq!(grants.granted(), ["network"]);
        grants.forget();
        assert!(grants.granted().is_empty());
        approver.request(approval(Some("network"))).await;
        drop((user, approver));
        assert_eq!(answering.await.unwrap(), 2);
    }

    #[tokio::test]
    async fn answers_are_one_per_question_in_order_with_only_offered_labels() {
        let question = |id: &str, options: &[&str]| Question {
            id: id.into(),
            question: format!("{id}?"),
            header: None,
            options: (options.iter())
                .map(|label| QuestionOption {
                    label: (*label).into(),
                    description: None,
                })
                .collect(),
            multi_select: true,
        };
        let (user, mut requests) = User::asking(Asking::default());
        let answering = tokio::spawn(async move {
            let Some(Request::Questions(questions)) = requests.recv().await else {
                panic!("no questions");
            };
            assert_eq!(questions.call_id, "call-7");
            questions.answer(vec![
                Answer {
                    id: "b".into(),
                    selected: vec!["x".into()],
                    custom: Some("  my own  ".into()),
                },
                Answer {
                    id: "a".into(),
                    selected: vec!["made up".into(), "yes".into()],
                    custom: Some(" ".into()),
                },
            ]);
        });
        let asked = vec![
            question("a", &["yes", "no"]),
            question("b", &[]),
            question("c", &["z"]),
        ];
        let outcome = user.questions.clone().unwrap().ask("call-7", asked).await;
        answering.await.unwrap();
        let answer = |id: &str, selected: &[&str], custom: Option<&str>| Answer {
            id: id.into(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            custom: custom.map(str::to_owned),
        };
        assert_eq!(
            outcome,
            AskOutcome::Answered(vec![
                answer("a", &["yes"], None),
                answer("b", &[], Some("my own")),
                answer("c", &[], None),
            ])
        );
    }

    #[tokio::test]
    async fn a_withdrawn_request_says_so() {
        let (user, mut requests) = User::asking(Asking {
            forms: true,
            ..Asking::default()
        });
        let questions = user.questions.clone().unwrap();
        assert!(questions.can_elicit());
        let asking = tokio::spawn(async move { questions.ask("c", Vec::new()).await });
        let Some(Request::Questions(mut asked)) = requests.recv().await else {
            panic!("no questions");
        };
        assert!(!asked.reply.is_withdrawn());
        asking.abort();
        asked.reply.withdrawn().await;
        assert!(asked.reply.is_withdrawn());
    }
}

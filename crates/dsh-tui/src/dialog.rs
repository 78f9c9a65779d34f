//! Dialogs that take the composer's place while the model waits for the person: an approval
//! (allow once, allow for the session, deny with a reason) and the model's questions.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_core::ask::{Answer, Approval, ApprovalRequest, Choice, Question, Questions};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// What the model is waiting for.
pub enum Dialog {
    Approval(ApprovalDialog),
    Questions(QuestionsDialog),
    /// An MCP server's question.
    Form(crate::form::FormDialog),
}

pub use crate::form::Handled;

impl Dialog {
    pub fn key(&mut self, key: KeyEvent) -> Handled {
        match self {
            Dialog::Approval(d) => d.key(key),
            Dialog::Questions(d) => d.key(key),
            Dialog::Form(d) => d.key(key),
        }
    }

    pub fn paste(&mut self, text: &str) {
        let input = match self {
            Dialog::Approval(d) => d.reason.as_mut(),
            Dialog::Questions(d) => d.custom.as_mut(),
            Dialog::Form(d) => d.input(),
        };
        if let Some(input) = input {
            input.push_str(&text.replace(['\r', '\n'], " "));
        }
    }

    /// Whether nobody waits for the answer any more (the call that asked was stopped).
    pub fn is_stale(&self) -> bool {
        match self {
            Dialog::Approval(d) => (d.asked.as_ref()).is_none_or(|a| a.reply.is_withdrawn()),
            Dialog::Questions(d) => (d.asked.as_ref()).is_none_or(|a| a.reply.is_withdrawn()),
            Dialog::Form(d) => (d.asked.as_ref()).is_none_or(|a| a.reply.is_withdrawn()),
        }
    }

    /// Answers "cancelled": Esc, an interrupted turn, or the UI closing.
    pub fn cancel(self) {
        match self {
            Dialog::Approval(d) => d.asked.map_or((), Approval::cancel),
            Dialog::Questions(d) => d.asked.map_or((), Questions::cancel),
            Dialog::Form(d) => d.asked.map_or((), dsh_core::ask::FormRequest::cancel),
        }
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        match self {
            Dialog::Approval(d) => d.lines(),
            Dialog::Questions(d) => d.lines(),
            Dialog::Form(d) => d.lines(),
        }
    }
}

pub struct ApprovalDialog {
    request: ApprovalRequest,
    choices: &'static [Choice],
    selected: usize,
    /// The reason being typed once "deny" is chosen.
    reason: Option<String>,
    /// The request, until it is answered.
    asked: Option<Approval>,
}

impl ApprovalDialog {
    /// The dialog, on Deny: what it asks for (a wider sandbox, the network, a call the review
    /// denied) is never what a stray Enter gives.
    pub fn new(asked: Approval) -> Self {
        let choices = asked.choices();
        ApprovalDialog {
            request: asked.request.clone(),
            choices,
            selected: choices.len() - 1,
            reason: None,
            asked: Some(asked),
        }
    }

    fn send(&mut self, choice: Choice, reason: Option<&str>) -> Handled {
        if let Some(asked) = self.asked.take() {
            asked.answer(choice, reason);
        }
        Handled::Closed
    }

    fn key(&mut self, key: KeyEvent) -> Handled {
        if let Some(reason) = &mut self.reason {
            match key.code {
                KeyCode::Enter => {
                    let reason = std::mem::take(reason);
                    return self.send(Choice::Deny, Some(&reason));
                }
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    reason.push(c);
                }
                _ => {}
            }
            return Handled::Open;
        }
        let choices = self.choices;
        let choose = |this: &mut Self, choice: usize| match choices.get(choice) {
            Some(choice @ (Choice::Once | Choice::Session)) => this.send(*choice, None),
            Some(Choice::Deny) => {
                this.reason = Some(String::new());
                Handled::Open
            }
            None => Handled::Open,
        };
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(choices.len() - 1),
            // A number chooses, as ↑↓ do; only Enter answers.
            KeyCode::Char(c) => {
                if let Some(n) = numbered(c).filter(|n| *n < choices.len()) {
                    self.selected = n;
                }
            }
            KeyCode::Enter => return choose(self, self.selected),
            _ => {}
        }
        Handled::Open
    }

    fn lines(&self) -> Vec<Line<'static>> {
        let mut lines = vec![
            Line::styled(
                format!("Allow {}?", self.request.tool),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ),
            Line::from(format!(
                "{} wants to {}",
                self.request.tool, self.request.reason
            )),
        ];
        if let Some(reason) = &self.reason {
            lines.push(Line::from(vec![
                Span::styled("Why not? ", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(reason.clone()),
                Span::styled("▏", Style::new().fg(Color::Cyan)),
            ]));
            lines.push(hint(
                "Enter sends the refusal (the model reads your reason) · Esc cancels",
            ));
            return lines;
        }
        let choices = self.choices;
        for (i, choice) in choices.iter().enumerate() {
            let label = match (choice, &self.request.grant) {
                (Choice::Once, _) => "Allow once".to_owned(),
                (Choice::Session, Some(grant)) => format!("Allow for this session ({grant})"),
                (Choice::Session, None) => "Allow for this session".to_owned(),
                (Choice::Deny, _) => "Deny, and say why".to_owned(),
            };
            lines.push(choice_line(
                i == self.selected,
                &format!("{}. {label}", i + 1),
                None,
            ));
        }
        lines.push(hint(&format!(
            "↑↓ or 1-{} choose · Enter confirms · Esc cancels",
            choices.len()
        )));
        lines
    }
}

pub struct QuestionsDialog {
    questions: Vec<Question>,
    answers: Vec<Answer>,
    /// The question shown.
    index: usize,
    /// The row under the cursor: the options, then "Other", then "Skip".
    selected: usize,
    /// Options ticked, for a multi-select question.
    ticked: Vec<bool>,
    /// The user's own words, once "Other" is chosen (or at once for a question with no
    /// options).
    custom: Option<String>,
    /// The model's request, until it is answered.
    asked: Option<Questions>,
}

impl QuestionsDialog {
    pub fn new(asked: Questions) -> Self {
        let mut dialog = QuestionsDialog {
            questions: asked.questions.clone(),
            answers: Vec::new(),
            index: 0,
            selected: 0,
            ticked: Vec::new(),
            custom: None,
            asked: Some(asked),
        };
        dialog.show(0);
        dialog
    }

    fn show(&mut self, index: usize) {
        self.index = index;
        self.selected = 0;
        let options = self.questions.get(index).map_or(0, |q| q.options.len());
        self.ticked = vec![false; options];
        self.custom = (options == 0).then(String::new);
    }

    fn question(&self) -> &Question {
        &self.questions[self.index]
    }

    /// Records the answer to the question shown and moves on; closes after the last.
    fn answered(&mut self, selected: Vec<String>, custom: Option<String>) -> Handled {
        self.answers.push(Answer {
            id: self.question().id.clone(),
            selected,
            custom,
        });
        if self.index + 1 < self.questions.len() {
            self.show(self.index + 1);
            return Handled::Open;
        }
        if let Some(asked) = self.asked.take() {
            asked.answer(std::mem::take(&mut self.answers));
        }
        Handled::Closed
    }

    fn key(&mut self, key: KeyEvent) -> Handled {
        let has_options = !self.question().options.is_empty();
        if let Some(custom) = &mut self.custom {
            match key.code {
                KeyCode::Enter => {
                    let text = custom.trim().to_owned();
                    return if text.is_empty() {
                        self.answered(Vec::new(), None)
                    } else {
                        self.answered(Vec::new(), Some(text))
                    };
                }
                KeyCode::Backspace => {
                    custom.pop();
                }
                KeyCode::Up if has_options => self.custom = None,
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    custom.push(c);
                }
                _ => {}
            }
            return Handled::Open;
        }
        let options = self.question().options.len();
        let (other, skip) = (options, options + 1);
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(skip),
            KeyCode::Char(' ') if self.question().multi_select && self.selected < options => {
                self.ticked[self.selected] ^= true;
            }
            // A number chooses (and ticks, for several), as ↑↓ and Space do; only Enter answers.
            KeyCode::Char(c) if numbered(c).is_some_and(|n| n < options) => {
                let n = numbered(c).unwrap_or_default();
                self.selected = n;
                if self.question().multi_select {
                    self.ticked[n] ^= true;
                }
            }
            KeyCode::Enter if self.selected == other => self.custom = Some(String::new()),
            KeyCode::Enter if self.selected == skip => return self.answered(Vec::new(), None),
            KeyCode::Enter => {
                let question = self.question();
                let chosen: Vec<String> = if question.multi_select {
                    let mut ticked: Vec<String> = (question.options.iter().zip(&self.ticked))
                        .filter(|(_, t)| **t)
                        .map(|(o, _)| o.label.clone())
                        .collect();
                    if ticked.is_empty() {
                        ticked.push(question.options[self.selected].label.clone());
                    }
                    ticked
                } else {
                    vec![question.options[self.selected].label.clone()]
                };
                return self.answered(chosen, None);
            }
            _ => {}
        }
        Handled::Open
    }

    fn lines(&self) -> Vec<Line<'static>> {
        let question = self.question();
        let mut title = format!("Question {} of {}", self.index + 1, self.questions.len());
        if let Some(header) = &question.header {
            title.push_str(" · ");
            title.push_str(header);
        }
        let mut lines = vec![
            Line::styled(
                title,
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ),
            Line::from(question.question.clone()),
        ];
        if let Some(custom) = &self.custom {
            lines.push(Line::from(vec![
                Span::styled("Answer: ", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(custom.clone()),
                Span::styled("▏", Style::new().fg(Color::Cyan)),
            ]));
            lines.push(hint(
                "Enter sends (empty skips) · Esc cancels all questions",
            ));
            return lines;
        }
        for (i, option) in question.options.iter().enumerate() {
            let tick = match (question.multi_select, self.ticked[i]) {
                (false, _) => "",
                (true, true) => "[x] ",
                (true, false) => "[ ] ",
            };
            lines.push(choice_line(
                i == self.selected,
                &format!("{}. {tick}{}", i + 1, option.label),
                option.description.as_deref(),
            ));
        }
        let options = question.options.len();
        lines.push(choice_line(
            self.selected == options,
            "Other: type an answer",
            None,
        ));
        lines.push(choice_line(
            self.selected == options + 1,
            "Skip this question",
            None,
        ));
        lines.push(hint(if question.multi_select {
            "↑↓ move · Space or a number ticks · Enter confirms · Esc cancels all questions"
        } else {
            "↑↓ or a number choose · Enter confirms · Esc cancels all questions"
        }));
        lines
    }
}

/// The choice a digit names (`1` the first), for the keys every dialog shares: a number
/// chooses, Enter confirms.
pub fn numbered(c: char) -> Option<usize> {
    c.to_digit(10)
        .filter(|d| *d > 0)
        .and_then(|d| usize::try_from(d - 1).ok())
}

fn choice_line(selected: bool, label: &str, description: Option<&str>) -> Line<'static> {
    let (marker, style) = if selected {
        (
            "› ",
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        )
    } else {
        ("  ", Style::default())
    };
    let mut spans = vec![Span::styled(format!("{marker}{label}"), style)];
    if let Some(description) = description {
        spans.push(Span::styled(
            format!(" — {description}"),
            Style::new().fg(Color::DarkGray),
        ));
    }
    Line::from(spans)
}

fn hint(text: &str) -> Line<'static> {
    Line::styled(text.to_owned(), Style::new().fg(Color::DarkGray))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::plain;
    use dsh_core::ask::{ApprovalOutcome, AskOutcome, QuestionOption};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool: "bash".into(),
            call_id: "c1".into(),
            reason: "escalate sandbox to danger-full-access: npm needs the network".into(),
            grant: Some("sandbox danger-full-access".into()),
        }
    }

    #[test]
    fn approval_choices_and_a_reasoned_denial() {
        let (asked, mut rx) = Approval::new(request());
        let mut dialog = ApprovalDialog::new(asked);
        insta::assert_snapshot!(plain(&dialog.lines()), @r"
        Allow bash?
        bash wants to escalate sandbox to danger-full-access: npm needs the network
          1. Allow once
          2. Allow for this session (sandbox danger-full-access)
        › 3. Deny, and say why
        ↑↓ or 1-3 choose · Enter confirms · Esc cancels
        ");
        // On Deny from the start: Enter asks why, and allows nothing.
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Open);
        for c in "not now".chars() {
            dialog.key(key(KeyCode::Char(c)));
        }
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        assert_eq!(
            rx.try_recv().unwrap(),
            ApprovalOutcome::Rejected {
                reason: Some("not now".into())
            }
        );

        let (asked, mut rx) = Approval::new(request());
        let mut dialog = ApprovalDialog::new(asked);
        dialog.key(key(KeyCode::Up));
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        assert_eq!(rx.try_recv().unwrap(), ApprovalOutcome::AllowedForSession);

        let (asked, mut rx) = Approval::new(request());
        Dialog::Approval(ApprovalDialog::new(asked)).cancel();
        assert_eq!(rx.try_recv().unwrap(), ApprovalOutcome::Cancelled);
    }

    #[test]
    fn a_number_chooses_and_only_enter_answers() {
        // An override of the review's denial: two choices, on Deny.
        let override_ = ApprovalRequest {
            reason: "run this call, which auto review denied: writes a file".into(),
            grant: None,
            ..request()
        };
        let (asked, mut rx) = Approval::new(override_);
        let mut dialog = ApprovalDialog::new(asked);
        assert!(plain(&dialog.lines()).contains("› 2. Deny, and say why"));
        for c in ['1', 'y', 'a', '9'] {
            assert_eq!(dialog.key(key(KeyCode::Char(c))), Handled::Open, "{c}");
        }
        assert!(rx.try_recv().is_err(), "nothing answered before Enter");
        assert!(plain(&dialog.lines()).contains("› 1. Allow once"));
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        assert_eq!(rx.try_recv().unwrap(), ApprovalOutcome::AllowedOnce);
    }

    #[test]
    fn questions_are_answered_one_by_one() {
        let questions = vec![
            Question {
                id: "db".into(),
                question: "Which database?".into(),
                header: Some("Storage".into()),
                options: vec![
                    QuestionOption {
                        label: "Postgres (Recommended)".into(),
                        description: Some("what production runs".into()),
                    },
                    QuestionOption {
                        label: "SQLite".into(),
                        description: None,
                    },
                ],
                multi_select: false,
            },
            Question {
                id: "langs".into(),
                question: "Which languages?".into(),
                header: None,
                options: vec![
                    QuestionOption {
                        label: "Rust".into(),
                        description: None,
                    },
                    QuestionOption {
                        label: "Go".into(),
                        description: None,
                    },
                ],
                multi_select: true,
            },
            Question {
                id: "name".into(),
                question: "What name?".into(),
                header: None,
                options: Vec::new(),
                multi_select: false,
            },
        ];
        let (asked, mut rx) = Questions::new("c1", questions);
        let mut dialog = QuestionsDialog::new(asked);
        insta::assert_snapshot!(plain(&dialog.lines()), @r"
        Question 1 of 3 · Storage
        Which database?
        › 1. Postgres (Recommended) — what production runs
          2. SQLite
          Other: type an answer
          Skip this question
        ↑↓ or a number choose · Enter confirms · Esc cancels all questions
        ");
        assert_eq!(dialog.key(key(KeyCode::Char('2'))), Handled::Open);
        assert!(plain(&dialog.lines()).contains("› 2. SQLite"), "2 chooses");
        assert_eq!(
            dialog.key(key(KeyCode::Enter)),
            Handled::Open,
            "Enter answers"
        );
        dialog.key(key(KeyCode::Char(' ')));
        dialog.key(key(KeyCode::Down));
        dialog.key(key(KeyCode::Char(' ')));
        assert!(plain(&dialog.lines()).contains("[x] Go"));
        dialog.key(key(KeyCode::Enter));
        for c in "dsh".chars() {
            dialog.key(key(KeyCode::Char(c)));
        }
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        let AskOutcome::Answered(answers) = rx.try_recv().unwrap() else {
            panic!("answered expected");
        };
        assert_eq!(answers[0].selected, ["SQLite"]);
        assert_eq!(answers[1].selected, ["Rust", "Go"]);
        assert_eq!(answers[2].custom.as_deref(), Some("dsh"));
    }
}

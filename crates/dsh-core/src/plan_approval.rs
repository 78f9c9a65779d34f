//! A plan submitted in plan mode, put to the user where there is one to ask (the terminal UI,
//! an editor, the web app): approved, the same session carries on in the mode they pick, in
//! the same turn; sent back, the model keeps planning with their words. With nobody to ask (a
//! headless run) the plan is the turn's answer, as in the reference.

use std::sync::{Arc, Mutex, PoisonError};

use dsh_config::PermissionMode;
use dsh_tools::{AskOutcome, Question, QuestionOption};

/// The permission mode a run's agents work under now: the run's, until a plan approved in
/// plan mode switches it. Shared by an agent and the kit that starts its subagents, so a child
/// started after the switch works in the new mode.
#[derive(Debug, Clone)]
pub(crate) struct CurrentMode(Arc<Mutex<PermissionMode>>);

impl CurrentMode {
    pub(crate) fn new(mode: PermissionMode) -> Self {
        CurrentMode(Arc::new(Mutex::new(mode)))
    }

    pub(crate) fn get(&self) -> PermissionMode {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set(&self, mode: PermissionMode) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }
}

/// What the user made of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlanDecision {
    /// Carry it out, in this mode.
    Approved(PermissionMode),
    /// Go on planning; their words, if any.
    KeepPlanning(Option<String>),
    /// They closed the question: the plan stands as the turn's answer.
    Undecided,
}

const KEEP_PLANNING: &str = "Keep planning";

/// The modes a plan may be carried out in, as the question offers them.
fn choices(auto_review: bool) -> Vec<(PermissionMode, &'static str, &'static str)> {
    let mut choices = vec![(
        PermissionMode::WorkspaceWrite,
        "Carry it out (workspace-write)",
        "Commands and file tools may change the workspace; the rest stays read-only",
    )];
    if auto_review {
        choices.push((
            PermissionMode::Auto,
            "Carry it out with Auto review (auto)",
            "No sandbox; a reviewer model allows or denies each changing call first",
        ));
    }
    choices.push((
        PermissionMode::DangerFullAccess,
        "Carry it out with full access (danger-full-access)",
        "No sandbox and no review",
    ));
    choices
}

/// The question a submitted plan is put to the user as. `auto_review`: whether the run has a
/// reviewer, so that Auto review can be picked.
pub(crate) fn question(auto_review: bool) -> Question {
    let mut options: Vec<QuestionOption> = choices(auto_review)
        .into_iter()
        .map(|(_, label, description)| QuestionOption {
            label: label.to_owned(),
            description: Some(description.to_owned()),
        })
        .collect();
    options.push(QuestionOption {
        label: KEEP_PLANNING.to_owned(),
        description: Some(
            "Stay in plan mode; answer in your own words to say what to change".to_owned(),
        ),
    });
    Question {
        id: "plan".to_owned(),
        question: "Carry out this plan?".to_owned(),
        header: Some("Plan".to_owned()),
        options,
        multi_select: false,
    }
}

/// The user's answer to [`question`] as a decision.
pub(crate) fn decision(outcome: AskOutcome, auto_review: bool) -> PlanDecision {
    let AskOutcome::Answered(answers) = outcome else {
        return PlanDecision::Undecided;
    };
    let Some(answer) = answers.into_iter().next() else {
        return PlanDecision::Undecided;
    };
    if let Some(words) = answer.custom.filter(|w| !w.trim().is_empty()) {
        return PlanDecision::KeepPlanning(Some(words.trim().to_owned()));
    }
    let Some(chosen) = answer.selected.first() else {
        return PlanDecision::Undecided;
    };
    match choices(auto_review)
        .into_iter()
        .find(|(_, label, _)| label == chosen)
    {
        Some((mode, _, _)) => PlanDecision::Approved(mode),
        None => PlanDecision::KeepPlanning(None),
    }
}

/// What the model reads as the result of its `exit_plan_mode` call after the user decided.
pub(crate) fn result_text(decision: &PlanDecision) -> String {
    match decision {
        PlanDecision::Approved(mode) => format!(
            "The user approved the plan and switched the session to {mode}: plan mode is over. \
             Carry the plan out now; files and commands may change what {mode} allows."
        ),
        PlanDecision::KeepPlanning(None) => "The user did not approve the plan yet. Stay in \
             plan mode: refine the plan, then submit it again with exit_plan_mode."
            .to_owned(),
        PlanDecision::KeepPlanning(Some(words)) => format!(
            "The user did not approve the plan yet and said: {words}\nStay in plan mode: \
             revise the plan with this in mind, then submit it again with exit_plan_mode."
        ),
        PlanDecision::Undecided => "Plan submitted. The user closed the question without \
             deciding, so the plan ends the turn as the answer."
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_tools::Answer;

    fn answered(selected: &[&str], custom: Option<&str>) -> AskOutcome {
        AskOutcome::Answered(vec![Answer {
            id: "plan".into(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            custom: custom.map(str::to_owned),
        }])
    }

    #[test]
    fn answers_become_decisions() {
        let labels: Vec<String> = question(true)
            .options
            .into_iter()
            .map(|o| o.label)
            .collect();
        assert_eq!(
            decision(answered(&[&labels[0]], None), true),
            PlanDecision::Approved(PermissionMode::WorkspaceWrite)
        );
        assert_eq!(
            decision(answered(&[&labels[1]], None), true),
            PlanDecision::Approved(PermissionMode::Auto)
        );
        assert_eq!(
            decision(answered(&[&labels[2]], None), true),
            PlanDecision::Approved(PermissionMode::DangerFullAccess)
        );
        assert_eq!(
            decision(answered(&[KEEP_PLANNING], None), true),
            PlanDecision::KeepPlanning(None)
        );
        assert_eq!(
            decision(answered(&[], Some(" test the parser first ")), true),
            PlanDecision::KeepPlanning(Some("test the parser first".into()))
        );
        assert_eq!(decision(answered(&[], None), true), PlanDecision::Undecided);
        assert_eq!(
            decision(AskOutcome::Cancelled, true),
            PlanDecision::Undecided
        );
        // Without a reviewer Auto review is not offered, and its label picks nothing.
        assert_eq!(question(false).options.len(), 3);
        assert_eq!(
            decision(answered(&[&labels[1]], None), false),
            PlanDecision::KeepPlanning(None)
        );
    }
}

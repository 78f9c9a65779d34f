//! The hooks around a question put to the user: PermissionRequest before an approval is asked
//! (exit 2 refuses it, nobody asked), and Notification while it waits (the dialog is shown at
//! once; its answer takes effect once the Notification hooks have run too).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalRequest, Approver};
use tokio_util::sync::CancellationToken;

use super::{HookEvent, HookRunner};

/// An approver whose requests pass through the session's hooks first.
pub(crate) struct HookedApprover {
    pub(crate) inner: Arc<dyn Approver>,
    pub(crate) hooks: Arc<HookRunner>,
    /// The run's tools, for the names other agents give them: a matcher written for Claude
    /// Code (`Bash`) chooses the tool as it does on PreToolUse.
    pub(crate) catalog: dsh_tools::ToolCatalog,
}

impl Approver for HookedApprover {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
        Box::pin(self.asked(request))
    }
}

impl HookedApprover {
    async fn asked(&self, request: ApprovalRequest) -> ApprovalOutcome {
        // A hook runs to its own timeout: a dropped request (a stopped call) drops it too.
        let unstopped = CancellationToken::new();
        let fields = serde_json::json!({
            "tool_name": request.tool,
            "tool_use_id": request.call_id,
            "reason": request.reason,
        });
        let facts = self.catalog.facts(&request.tool);
        let tool: Vec<&str> = std::iter::once(request.tool.as_str())
            .chain(facts.iter().flat_map(|f| f.hook_names.iter().copied()))
            .collect();
        let verdict = (self.hooks)
            .fire(
                HookEvent::PermissionRequest,
                Some(&tool),
                fields,
                &unstopped,
            )
            .await;
        if let Some(why) = verdict.blocked {
            return ApprovalOutcome::Rejected {
                reason: Some(format!("a PermissionRequest hook refused it: {why}")),
            };
        }
        let notice = serde_json::json!({
            "message": format!("dsh needs your approval: {}", request.reason),
            "notification_type": "permission_prompt",
        });
        let notified = self
            .hooks
            .fire(HookEvent::Notification, None, notice, &unstopped);
        let (outcome, _) = tokio::join!(self.inner.request(request), notified);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use dsh_sandbox::{Sandbox, SandboxMode, SandboxPolicy};
    use dsh_tools::{Shell, ShellEnv};

    use super::*;
    use crate::hooks::HookSet;

    struct Person {
        asked: Mutex<Vec<String>>,
    }

    impl Approver for Person {
        fn request(
            &self,
            request: ApprovalRequest,
        ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
            self.asked.lock().unwrap().push(request.reason);
            Box::pin(async { ApprovalOutcome::AllowedOnce })
        }
    }

    fn hooked(ws: &std::path::Path, hooks: serde_json::Value) -> (HookedApprover, Arc<Person>) {
        let home = ws.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("hooks.json"), hooks.to_string()).unwrap();
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let session = format!("approvals-{}", std::process::id());
        let runner = HookRunner {
            hooks: HookSet::load(&home, None).unwrap(),
            redactor: None,
            subagent: false,
            shell: Arc::new(Shell::new(
                ShellEnv::new(Vec::new()),
                &session,
                Arc::new(Sandbox::default()),
            )),
            policy: SandboxPolicy::new(SandboxMode::DangerFullAccess, ws, Vec::new()),
            cwd: ws.to_path_buf(),
            session_id: "s".into(),
            transcript: ws.join("log.jsonl"),
            events,
        };
        let person = Arc::new(Person {
            asked: Mutex::new(Vec::new()),
        });
        let approver = HookedApprover {
            inner: person.clone(),
            hooks: Arc::new(runner),
            catalog: dsh_tools::ToolCatalog::default(),
        };
        (approver, person)
    }

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool: "bash".into(),
            call_id: "c1".into(),
            reason: "escalate sandbox to danger-full-access: install".into(),
            grant: None,
        }
    }

    #[tokio::test]
    async fn a_permission_request_hook_can_refuse_before_anyone_is_asked() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let hooks = serde_json::json!({"hooks": {"PermissionRequest": [{"matcher": "bash",
            "hooks": [{"type": "command", "command": "echo 'not on this machine' >&2; exit 2"}]}]}});
        let (approver, person) = hooked(&ws, hooks);
        let outcome = approver.request(request()).await;
        assert_eq!(
            outcome,
            ApprovalOutcome::Rejected {
                reason: Some("a PermissionRequest hook refused it: not on this machine".into())
            }
        );
        assert!(person.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_notification_hook_hears_of_the_waiting_approval() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let hooks = serde_json::json!({"hooks": {
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "cat > permission.json"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "cat > notified.json"}]}],
        }});
        let (approver, person) = hooked(&ws, hooks);
        let outcome = approver.request(request()).await;
        assert_eq!(outcome, ApprovalOutcome::AllowedOnce);
        assert_eq!(person.asked.lock().unwrap().len(), 1);
        let read = |file: &str| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(ws.join(file)).unwrap()).unwrap()
        };
        let permission = read("permission.json");
        assert_eq!(permission["hook_event_name"], "PermissionRequest");
        assert_eq!(permission["tool_name"], "bash");
        let notified = read("notified.json");
        assert_eq!(notified["hook_event_name"], "Notification");
        assert_eq!(notified["notification_type"], "permission_prompt");
        assert!(
            notified["message"]
                .as_str()
                .unwrap()
                .contains("danger-full-access")
        );
    }
}

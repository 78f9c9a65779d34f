//! Pricing each request: a provider wrapped so that every attempt's usage carries its cost
//! at the model's prices, taken at the moment the attempt was sent. Prices can depend on the
//! hour (DeepSeek's peak hours), so the cost of a run is the sum of its requests' costs, never
//! its total tokens at one rate.

use std::sync::Arc;
use std::time::SystemTime;

use dsh_protocol::Prices;

use crate::{BoxFuture, Completion, DeltaSink, LlmError, ModelRequest, Provider};

/// A provider whose answers and failures come back priced.
pub struct Priced {
    inner: Arc<dyn Provider>,
    prices: Prices,
}

impl Priced {
    pub fn new(inner: Arc<dyn Provider>, prices: Prices) -> Self {
        Priced { inner, prices }
    }
}

impl Provider for Priced {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let sent = SystemTime::now();
            match self.inner.complete(request, on_delta).await {
                Ok(mut completion) => {
                    completion.usage = completion.usage.priced(&self.prices, sent);
                    Ok(completion)
                }
                Err(mut error) => {
                    error.usage = error.usage.priced(&self.prices, sent);
                    Err(error)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{Message, Usage};

    use dsh_protocol::{Failure, FailureCode, FinishReason};

    use crate::Effort;

    /// Answers once, then fails, each with the same usage.
    struct Scripted;

    impl Provider for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }

        fn complete<'a>(
            &'a self,
            request: ModelRequest<'a>,
            _on_delta: DeltaSink<'a>,
        ) -> BoxFuture<'a, Result<Completion, LlmError>> {
            let usage = Usage::new(1_000_000, 1_000_000, 0, 0, 0);
            Box::pin(async move {
                if request.model == "fails" {
                    return Err(LlmError::new(
                        Failure::new(FailureCode::Server, "down"),
                        usage,
                    ));
                }
                Ok(Completion {
                    message: Message::user_text("hi"),
                    finish: FinishReason::Stop,
                    usage,
                    retried: Usage::default(),
                })
            })
        }
    }

    fn request(model: &str) -> ModelRequest<'_> {
        ModelRequest {
            model,
            system: "",
            messages: &[],
            tools: &[],
            effort: Effort::Off,
            max_output_tokens: None,
        }
    }

    #[tokio::test]
    async fn answers_and_failures_both_carry_their_cost() {
        let prices = Prices {
            input: 1.0,
            output: 2.0,
            ..Prices::default()
        };
        let priced = Priced::new(Arc::new(Scripted), prices);
        let answer = priced.complete(request("ok"), &mut |_| {}).await.unwrap();
        assert_eq!(answer.usage.cost_usd, Some(3.0));
        let failure = priced
            .complete(request("fails"), &mut |_| {})
            .await
            .unwrap_err();
        assert_eq!(failure.usage.cost_usd, Some(3.0));
    }
}

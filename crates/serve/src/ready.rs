//! Readiness (`/readyz`): trees loaded, and a judge checkup no older than
//! the TTL. The checkup (one tiny known decision of each kind) is cached
//! and run by one request at a time, so probes do not load the judge.

use crate::api::Readiness;
use crate::App;
use std::time::{Duration, Instant};

/// What the last checkup found: its warnings, or why the judge failed.
type Outcome = Result<Vec<String>, String>;

/// The last checkup and when it ran.
#[derive(Debug, Default)]
pub(crate) struct LastCheckup(tokio::sync::Mutex<Option<(Instant, Outcome)>>);

/// A checkup waits this long for the judge at most.
const CHECKUP_LIMIT: Duration = Duration::from_secs(10);

impl App {
    pub(crate) async fn readiness(&self) -> Readiness {
        let (at, outcome) = self.checkup().await;
        let trees = self.registry.len();
        let mut problems = Vec::new();
        if trees == 0 {
            problems.push("no tree loaded".to_string());
        }
        let changed = self.registry.changed_on_disk();
        for name in &changed {
            problems.push(format!(
                "tree `{name}` was written over in place or found damaged while served; reload it (or restore its files)"
            ));
        }
        let unloaded = self.registry.unloaded();
        for (name, why) in &unloaded {
            problems.push(format!(
                "tree `{name}` is not loaded: {}; its requests answer 503 until its files load",
                crate::error::redact_urls(why)
            ));
        }
        let stale = self.registry.stale().await;
        for name in &stale {
            problems.push(format!(
                "tree `{name}` has a newer generation on disk that does not load (see the server log); the older one answers"
            ));
        }
        let judge_ok = match outcome {
            Ok(warnings) => {
                problems.extend(warnings);
                true
            }
            Err(e) => {
                problems.push(format!("judge: {}", crate::error::redact_urls(&e)));
                false
            }
        };
        Readiness {
            ready: trees > 0
                && judge_ok
                && changed.is_empty()
                && stale.is_empty()
                && unloaded.is_empty(),
            trees,
            judge: self.judge.kind().to_string(),
            judge_ok,
            problems,
            checked_secs_ago: at.elapsed().as_secs_f64(),
        }
    }

    /// The cached checkup, run again once older than the TTL.
    async fn checkup(&self) -> (Instant, Outcome) {
        let mut last = self.ready.0.lock().await;
        if let Some((at, outcome)) = &*last {
            if at.elapsed() < self.limits.ready_ttl {
                return (*at, outcome.clone());
            }
        }
        let limit = self.limits.ready_ttl.min(CHECKUP_LIMIT);
        // The embedding judge answers only over a tree's vectors (each
        // navigator attaches its own, or judges lexically): in-process,
        // nothing to ask on its own.
        let outcome = if self.judge.uses_vectors() {
            Ok(Vec::new())
        } else {
            match tokio::time::timeout(limit, treenav_judge::checkup(&self.judge)).await {
                Ok(Ok(c)) => Ok(c.warnings),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {} s", limit.as_secs_f64())),
            }
        };
        let now = Instant::now();
        *last = Some((now, outcome.clone()));
        (now, outcome)
    }
}

//! Admission: at most `max_concurrent` retrievals and prunes run at once;
//! up to `queue` more wait (each at most `queue_wait`) for a slot; beyond
//! that a request is refused at once with 503 and `Retry-After`, so load
//! above capacity sheds quickly instead of piling up into timeouts.

use crate::error::ApiError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Seconds a refused client is told to wait.
const RETRY_AFTER_SECS: u64 = 1;

#[derive(Debug)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    queue_wait: Duration,
}

/// Counts a waiter while it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    pub(crate) fn new(max_concurrent: usize, queue: usize, queue_wait: Duration) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(max_concurrent)),
            waiting: AtomicUsize::new(0),
            queue,
            queue_wait,
        }
    }

    /// A slot, or 503 when the queue is full or the wait runs out.
    pub(crate) async fn admit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(overloaded());
        }
        let _waiting = Waiting(&self.waiting);
        match tokio::time::timeout(self.queue_wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(overloaded()),
        }
    }
}

fn overloaded() -> ApiError {
    metrics::counter!("treenav_overloaded_total").increment(1);
    ApiError::overloaded(RETRY_AFTER_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn beyond_slots_and_queue_is_refused_at_once() {
        let a = Admission::new(1, 1, Duration::from_millis(200));
        let first = a.admit().await.expect("a free slot");
        // The second waits in the queue; the third finds the queue full.
        let (second, third) = tokio::join!(a.admit(), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            a.admit().await
        });
        let third = third.expect_err("queue full");
        assert_eq!(third.retry_after, Some(RETRY_AFTER_SECS));
        // The queued one timed out waiting, since the slot was never freed.
        assert!(second.is_err());
        drop(first);
        assert!(a.admit().await.is_ok(), "a freed slot admits again");
    }
}

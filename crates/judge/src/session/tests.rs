//! The session against the in-memory decider: batching within limits,
//! references in every call, one scale across calls and rounds, pointwise
//! budgets.

use super::*;
use crate::{Limits, Scripted};

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn list(n: usize) -> Vec<Candidate> {
    (0..n)
        .map(|i| Candidate::new(format!("c{i}"), format!("text {i}")))
        .collect()
}

/// Candidate `ci`'s own merit: i / 10 on the logit scale.
fn base(c: &Candidate) -> f64 {
    c.id[1..].parse::<f64>().unwrap_or(0.0) / 10.0
}

/// A judge that scores relative to its context: logit = merit minus the
/// call's mean merit, so each call has its own scale.
fn relative() -> Scripted {
    Scripted::new(|_, c, call| {
        let mean = call.iter().map(base).sum::<f64>() / call.len() as f64;
        sigmoid(base(c) - mean)
    })
}

fn options(batch_size: usize) -> SessionOptions {
    SessionOptions {
        batch_size,
        calibration: true,
        shortlist: 0,
        max_cost_usd: None,
    }
}

fn limited(max_questions: usize) -> Limits {
    Limits {
        max_questions,
        max_options: 26,
        max_state_tokens: 1 << 30,
    }
}

/// On one scale: every calibrated logit minus the candidate's merit is the
/// same constant.
fn assert_one_scale(scores: &[f64], candidates: &[Candidate]) {
    let offsets: Vec<f64> = scores
        .iter()
        .zip(candidates)
        .map(|(s, c)| logit(*s) - base(c))
        .collect();
    for o in &offsets {
        assert!((o - offsets[0]).abs() < 1e-6, "{offsets:?}");
    }
}

#[test]
fn a_list_that_fits_is_one_call_without_references() {
    let d = relative();
    let mut s = Session::new(&d, options(10));
    let c = list(5);
    let scored = run(s.judge_list("q", &c)).expect("judged");
    assert_eq!(d.calls(), vec![vec!["c0", "c1", "c2", "c3", "c4"]]);
    assert_eq!(scored.shown, 5);
    assert!(scored.calls[0].references.is_empty());
}

/// The bug this session fixes: with a decider whose limit is below the batch
/// size, the dispatcher used to split each batch, and only its first call
/// carried the references. Every call must carry them, within the limit.
#[test]
fn every_call_carries_the_references_within_the_deciders_limit() {
    let d = relative().limits(limited(8));
    let mut s = Session::new(&d, options(100));
    let c = list(30);
    let scored = run(s.judge_list("q", &c)).expect("judged");
    let calls = d.calls();
    assert!(calls.len() >= 4, "{calls:?}");
    for call in &calls {
        assert!(call.len() <= 8, "{call:?}");
        assert!(call.contains(&"c0".to_string()) && call.contains(&"c1".to_string()));
    }
    // Every candidate scored exactly once as a member.
    let members: usize = scored.calls.iter().map(|c| c.own.len()).sum();
    assert_eq!(members, 30);
    assert_eq!(scored.shown, calls.iter().map(Vec::len).sum::<usize>());
    assert_one_scale(&scored.scores, &c);
}

#[test]
fn without_calibration_calls_keep_their_own_scales() {
    let d = relative().limits(limited(8));
    let mut s = Session::new(
        &d,
        SessionOptions {
            calibration: false,
            ..options(100)
        },
    );
    let c = list(30);
    let scored = run(s.judge_list("q", &c)).expect("judged");
    assert!(d
        .calls()
        .iter()
        .skip(1)
        .all(|call| !call.contains(&"c0".to_string())));
    assert_eq!(scored.shown, 30);
    let offsets: Vec<f64> = scored
        .scores
        .iter()
        .zip(&c)
        .map(|(s, c)| logit(*s) - base(c))
        .collect();
    assert!((offsets[0] - offsets[29]).abs() > 0.5, "{offsets:?}");
}

#[test]
fn rounds_share_one_anchor() {
    let d = relative();
    let mut s = Session::new(&d, options(100));
    let all = list(25);
    let first = run(s.judge_round("q", &all[..9], 4)).expect("round 1");
    let second = run(s.judge_round("q", &all[9..], 4)).expect("round 2");
    let calls = d.calls();
    // The first call holds the anchor as its own first candidate; every
    // other call shows it appended.
    assert_eq!(calls[0][0], "c0");
    assert!(calls
        .iter()
        .all(|c| c.contains(&"c0".to_string()) && c.len() <= 4));
    assert!(calls[1..]
        .iter()
        .all(|c| c.last().map(String::as_str) == Some("c0")));
    let mut scores = first.scores.clone();
    scores.extend(&second.scores);
    assert_one_scale(&scores, &all);
    assert_eq!(s.shown(), calls.iter().map(Vec::len).sum::<usize>());
}

#[test]
fn round_capacity_counts_the_anchor() {
    let d = relative();
    let s = Session::new(&d, options(100));
    // First round: 4, then 3 + the anchor, twice: 12 shown.
    assert_eq!(s.round_capacity(12, 4), 4 + 3 + 3);
    // 13 leaves one judgment, too few for a candidate beside the anchor.
    assert_eq!(s.round_capacity(13, 4), 10);
    let pointwise = relative().pointwise(true);
    let s = Session::new(&pointwise, options(100));
    assert_eq!(s.round_capacity(12, 4), 12);
}

#[test]
fn a_pointwise_decider_spends_every_judgment_on_a_candidate() {
    let d = Scripted::new(|_, c, _| sigmoid(base(c) - 1.0))
        .pointwise(true)
        .limits(limited(8));
    let mut s = Session::new(
        &d,
        SessionOptions {
            shortlist: 5,
            ..options(100)
        },
    );
    assert_eq!(s.shortlist_cost(), 0);
    assert_eq!(s.fit(20), 20);
    let c = list(20);
    let ranked = run(s.rank("q", &c)).expect("ranked");
    assert_eq!(ranked.shown, 20);
    assert!(ranked.rerank.iter().all(Option::is_none));
    assert_eq!(ranked.order[..3], [19, 18, 17]);
    // No reference anywhere, no choose call: 20 distinct candidates shown.
    let shown: Vec<String> = d.calls().concat();
    assert_eq!(shown.len(), 20);
}

#[test]
fn fit_counts_references_and_the_shortlist() {
    let d = relative();
    let s = Session::new(&d, options(100));
    assert_eq!(s.fit(195), 193);
    assert_eq!(s.fit(95), 95);
    let s = Session::new(
        &d,
        SessionOptions {
            shortlist: 5,
            ..options(100)
        },
    );
    assert_eq!(s.fit(200), 193);
    // A decider limit below the batch size: calls of 8, 6 + 2 references.
    let small = relative().limits(limited(8));
    let s = Session::new(&small, options(100));
    assert_eq!(s.fit(8), 8);
    assert_eq!(s.fit(16), 14);
    let mut s = Session::new(&small, options(100));
    let c = list(14);
    let scored = run(s.judge_list("q", &c)).expect("judged");
    assert_eq!(scored.shown, 16);
}

#[test]
fn the_shortlist_reorders_by_choice_and_counts() {
    let d = relative();
    let mut s = Session::new(
        &d,
        SessionOptions {
            shortlist: 3,
            ..options(100)
        },
    );
    let c = list(6);
    let ranked = run(s.rank("q", &c)).expect("ranked");
    assert_eq!(ranked.order[..3], [5, 4, 3]);
    assert_eq!(ranked.shown, 9);
    assert!(ranked.rerank[5].is_some() && ranked.rerank[0].is_none());
    assert_eq!(d.calls().len(), 2);
}

#[test]
fn saturated_references_do_not_calibrate() {
    // Reference 0 saturated in one call: only reference 1 calibrates.
    let shifts = list_shifts(&[vec![0.0, 0.5], vec![0.3, sigmoid(1.0)]], 2, 2);
    assert!((shifts[0].expect("shift") - 0.5).abs() < 1e-9);
    assert!((shifts[1].expect("shift") + 0.5).abs() < 1e-9);
    let none = list_shifts(&[vec![0.0, 1.0], vec![0.3, 1.0]], 2, 2);
    assert_eq!(none, vec![None, None]);
}

#[test]
fn a_failing_call_is_named() {
    let d = relative()
        .limits(limited(8))
        .fail_when(|c| c.iter().any(|x| x.id == "c20"));
    let mut s = Session::new(&d, options(100));
    let err = run(s.judge_list("q", &list(30))).expect_err("call fails");
    assert_eq!(err.call, 3);
}

#[test]
fn calls_fit_the_state_token_limit_with_their_references() {
    let d = relative().limits(Limits {
        max_questions: 100,
        max_options: 26,
        max_state_tokens: 200,
    });
    let c: Vec<Candidate> = (0..20)
        .map(|i| Candidate::new(format!("c{i}"), "word ".repeat(30)))
        .collect();
    let mut s = Session::new(&d, options(100));
    let scored = run(s.judge_list("q", &c)).expect("judged");
    assert!(scored.calls.len() > 2);
    for call in d.calls() {
        let shown: Vec<Candidate> = call
            .iter()
            .map(|id| c.iter().find(|x| &x.id == id).cloned().expect("known"))
            .collect();
        let tokens = crate::render::estimate_tokens(&crate::render_state("q", &[]))
            + shown
                .iter()
                .map(crate::render::candidate_line_tokens)
                .sum::<u64>();
        assert!(tokens <= 200, "{tokens}");
        assert!(call.contains(&"c0".to_string()));
    }
}

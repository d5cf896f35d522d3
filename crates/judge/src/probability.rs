//! Probabilities, one home: log-odds and back, the softmax at a
//! temperature, renormalising weights, a distribution's confidence and
//! expected level. Every backend, the session and the fitted models use
//! these (#69 row 4: softmax was written three times, sigmoid twice).

/// The log-odds of `p` (clamped away from 0 and 1).
pub fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-9, 1.0 - 1e-9);
    (p / (1.0 - p)).ln()
}

/// The inverse of [`logit`].
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The softmax of `x` at `temperature` (> 0): `exp((x − max) / t)`,
/// renormalised ([`normalize`]).
pub fn softmax(x: &[f64], temperature: f64) -> Vec<f64> {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    normalize(
        &x.iter()
            .map(|v| ((v - max) / temperature).exp())
            .collect::<Vec<_>>(),
    )
}

/// Renormalises non-negative weights to sum to 1 (uniform when all are 0).
pub fn normalize(weights: &[f64]) -> Vec<f64> {
    let total: f64 = weights.iter().filter(|w| w.is_finite() && **w > 0.0).sum();
    if total <= 0.0 {
        let n = weights.len().max(1) as f64;
        return vec![1.0 / n; weights.len()];
    }
    weights
        .iter()
        .map(|w| {
            if w.is_finite() && *w > 0.0 {
                w / total
            } else {
                0.0
            }
        })
        .collect()
}

/// Entropy-based confidence 1 − H(p)/ln(n) of a distribution.
pub fn confidence(p: &[f64]) -> f64 {
    if p.len() < 2 {
        return 1.0;
    }
    let h: f64 = p.iter().filter(|x| **x > 0.0).map(|x| -x * x.ln()).sum();
    (1.0 - h / (p.len() as f64).ln()).clamp(0.0, 1.0)
}

/// The expected level index of a distribution over levels.
pub fn expected_level(p: &[f64]) -> f64 {
    p.iter().enumerate().map(|(i, x)| i as f64 * x).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_agree_with_their_definitions() {
        assert!((sigmoid(logit(0.3)) - 0.3).abs() < 1e-12);
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-12);
        let s = softmax(&[1.0, 2.0, 3.0], 1.0);
        assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12 && s[2] > s[1] && s[1] > s[0]);
        let cold = softmax(&[1.0, 2.0], 0.1);
        assert!(cold[1] > 0.99, "{cold:?}");
        assert_eq!(normalize(&[0.0, 0.0]), [0.5, 0.5]);
        assert_eq!(confidence(&[1.0, 0.0]), 1.0);
        assert!((expected_level(&[0.0, 0.5, 0.5]) - 1.5).abs() < 1e-12);
    }
}

//! Optional bearer-token authentication. Tokens are kept as SHA-256
//! digests and a presented token is compared with every one of them in
//! constant time, so neither a token's bytes nor which token matched leak
//! through timing; a refusal says only `unauthorized`.

use crate::error::{ApiError, Error};
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The accepted tokens (their digests; the tokens themselves are dropped).
#[derive(Clone)]
pub struct Tokens {
    digests: Arc<Vec<[u8; 32]>>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} accepted)", self.digests.len())
    }
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

impl Tokens {
    /// Tokens from text: one per line (or comma-separated); blank lines and
    /// lines starting with `#` are skipped. `origin` names the source in
    /// errors (never the tokens). At least one token of 16+ characters.
    pub fn parse(text: &str, origin: &str) -> Result<Tokens, Error> {
        let tokens: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .flat_map(|l| l.split(',').map(str::trim).filter(|t| !t.is_empty()))
            .collect();
        if tokens.is_empty() {
            return Err(Error::Config(format!("{origin}: no token")));
        }
        if let Some(i) = tokens.iter().position(|t| t.len() < 16) {
            return Err(Error::Config(format!(
                "{origin}: token {} is shorter than 16 characters",
                i + 1
            )));
        }
        if let Some(i) = tokens
            .iter()
            .position(|t| t.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(Error::Config(format!(
                "{origin}: token {} has whitespace or control characters",
                i + 1
            )));
        }
        Ok(Tokens {
            digests: Arc::new(tokens.iter().map(|t| digest(t.as_bytes())).collect()),
        })
    }

    /// Tokens from the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Tokens, Error> {
        let text = std::env::var(var).map_err(|_| {
            Error::Config(format!(
                "environment variable {var} is not set (or not UTF-8)"
            ))
        })?;
        Tokens::parse(&text, &format!("${var}"))
    }

    /// Tokens from a file, one per line.
    pub fn from_file(path: &Path) -> Result<Tokens, Error> {
        let kind = treenav_files::Kind::new("--auth-token-file", 1 << 20);
        let text = treenav_files::read_to_string(path, &kind).map_err(|e| Error::Tokens {
            path: path.to_path_buf(),
            source: e.into_io(),
        })?;
        Tokens::parse(&text, &path.display().to_string())
    }

    /// Whether `presented` is one of the tokens, in constant time.
    pub fn accepts(&self, presented: &[u8]) -> bool {
        let d = digest(presented);
        let mut found = subtle::Choice::from(0u8);
        for known in self.digests.iter() {
            found |= known.ct_eq(&d);
        }
        found.into()
    }
}

/// Middleware: refuses a request without an accepted `Authorization:
/// Bearer` token with a bare 401.
pub(crate) async fn require(
    State(tokens): State<Tokens>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    // The scheme is case-insensitive (RFC 9110 §11.1); the token is not.
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.as_bytes())
        .filter(|v| v.len() > 7 && v[..7].eq_ignore_ascii_case(b"bearer "))
        .map(|v| &v[7..]);
    match presented {
        Some(token) if tokens.accepts(token) => Ok(next.run(request).await),
        _ => Err(ApiError::unauthorized()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_match() {
        let t = Tokens::parse(
            "# ops\nabcdefghijklmnop\n\nqrstuvwxyz0123456789, zzzzzzzzzzzzzzzz\n",
            "f",
        )
        .expect("tokens");
        assert!(t.accepts(b"abcdefghijklmnop"));
        assert!(t.accepts(b"zzzzzzzzzzzzzzzz"));
        assert!(!t.accepts(b"abcdefghijklmno"));
        assert!(!t.accepts(b""));
        let short = Tokens::parse("short", "f").expect_err("short token");
        assert!(short.to_string().contains("token 1 is shorter"), "{short}");
        assert!(!short.to_string().contains("short\""));
        assert!(Tokens::parse("# nothing\n", "f").is_err());
        assert_eq!(format!("{t:?}"), "Tokens(3 accepted)");
    }
}

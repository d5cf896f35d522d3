//! The pruner's JSON input, as `treenav prune` reads it (and a service
//! would): a request `{"question": …, "chunks": […]}`, or a bare array of
//! chunks, where a chunk is a string or an `{"id", "text"}` object.
//!
//! Any bytes are safe to give: a parse error names the input, the line and
//! the column; ids that are not strings (numbers, say) are kept as their
//! JSON text; a chunk without an id is named by its position.

use crate::{Chunk, Error, Result};
use serde::Deserialize;

/// A parsed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The question, when the input carries one.
    pub question: Option<String>,
    /// The chunks, in the incoming ranking's order.
    pub chunks: Vec<Chunk>,
}

/// One chunk as the JSON input gives it: a string, or an `{"id", "text"}`
/// object (a service embeds it in its own request type).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ChunkIn {
    /// The text alone; its id is its position.
    Text(String),
    /// Text with an id (a string; other JSON is kept as its JSON text).
    Object {
        /// The id (optional).
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
        id: Option<serde_json::Value>,
        /// The text.
        text: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestIn {
    #[serde(default)]
    question: Option<String>,
    chunks: Vec<ChunkIn>,
}

/// What the input may hold, for error messages.
const REQUEST_SHAPE: &str =
    "expected {\"question\": …, \"chunks\": [strings or {\"id\", \"text\"} objects]}";
const CHUNKS_SHAPE: &str = "expected a JSON array of strings or of {\"id\", \"text\"} objects";

/// Parses a request object; `name` stands for the input in errors.
pub fn parse_request(bytes: &[u8], name: &str) -> Result<Request> {
    let request: RequestIn = parse(bytes, name, REQUEST_SHAPE)?;
    Ok(Request {
        question: request.question,
        chunks: to_chunks(request.chunks),
    })
}

/// Parses either shape, told apart by the first character: a request
/// object, or a bare array of chunks (no question); anything else is an
/// error naming both shapes.
pub fn parse_any(bytes: &[u8], name: &str) -> Result<Request> {
    // The opening bracket and brace, as bytes.
    const ARRAY: u8 = 0x5b;
    const OBJECT: u8 = 0x7b;
    match bytes.iter().find(|b| !b.is_ascii_whitespace()).copied() {
        Some(ARRAY) => Ok(Request {
            question: None,
            chunks: parse_chunks(bytes, name)?,
        }),
        Some(OBJECT) => parse_request(bytes, name),
        _ => Err(Error::Input(format!(
            "{name}: neither a request object nor an array of chunks ({REQUEST_SHAPE}; or {CHUNKS_SHAPE})"
        ))),
    }
}

/// Parses a bare array of chunks; `name` stands for the input in errors.
pub fn parse_chunks(bytes: &[u8], name: &str) -> Result<Vec<Chunk>> {
    let items: Vec<ChunkIn> = parse(bytes, name, CHUNKS_SHAPE)?;
    Ok(to_chunks(items))
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8], name: &str, shape: &str) -> Result<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::Input(format!("{name}: empty input ({shape})")));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| Error::Input(format!("{name}:{}:{}: {e} ({shape})", e.line(), e.column())))
}

/// Chunks from their JSON form; a chunk without an id is named by its position.
pub fn to_chunks(items: Vec<ChunkIn>) -> Vec<Chunk> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, c)| match c {
            ChunkIn::Text(text) => Chunk::new(i.to_string(), text),
            ChunkIn::Object { id, text } => {
                let id = match id {
                    Some(serde_json::Value::String(s)) => s,
                    Some(serde_json::Value::Null) | None => i.to_string(),
                    Some(v) => v.to_string(),
                };
                Chunk::new(id, text)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_both_shapes_and_names_errors() -> Result<()> {
        let r = parse_request(
            br#"{"question": "q", "chunks": ["a", {"id": 7, "text": "b"}, {"text": "c"}]}"#,
            "stdin",
        )?;
        assert_eq!(r.question.as_deref(), Some("q"));
        let ids: Vec<&str> = r.chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["0", "7", "2"]);
        assert_eq!(parse_chunks(br#"["x"]"#, "c.json")?[0].text, "x");
        let e = parse_request(b"{\n \"chunks\": [1]}", "stdin").expect_err("a number");
        assert!(e.to_string().contains("stdin:2:"), "{e}");
        let e = parse_request(br#"{"chunks": [], "extra": 1}"#, "stdin").expect_err("unknown");
        assert!(e.to_string().contains("extra"), "{e}");
        assert!(parse_chunks(b"  \n", "c.json").is_err());
        // Either shape by its first character, never a serde field name.
        let bare = parse_any(b" [\"a\"]", "stdin")?;
        assert_eq!((bare.question, bare.chunks.len()), (None, 1));
        assert!(parse_any(b"[]", "stdin")?.chunks.is_empty());
        assert_eq!(
            parse_any(br#"{"question": "q", "chunks": []}"#, "stdin")?
                .question
                .as_deref(),
            Some("q")
        );
        let e = parse_any(b"42", "stdin").expect_err("a number");
        assert!(
            e.to_string()
                .contains("neither a request object nor an array"),
            "{e}"
        );
        Ok(())
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            ".{0,12}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(
                    "(question|chunks|id|text|[a-z]{1,4})",
                    inner,
                    0..4
                )
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]
        /// Any bytes: a request or an error naming the input, never a panic.
        #[test]
        fn any_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            for result in [parse_request(&bytes, "in").map(|r| r.chunks), parse_chunks(&bytes, "in")] {
                if let Err(e) = result {
                    prop_assert!(e.to_string().contains("in"), "{}", e);
                }
            }
        }

        /// Whatever chunks parse, the pruner (lexical judge, every
        /// strategy) answers or refuses the input; it never panics.
        #[test]
        fn parsed_chunks_prune_or_fail_cleanly(
            question in "\\PC{0,20}",
            texts in proptest::collection::vec("(\\PC|[\\x00-\\x1f\\u{2028}\\u{202e}]){0,40}", 0..6),
            ids in proptest::collection::vec(proptest::option::of("[a-c ]{0,2}"), 6),
        ) {
            let chunks: Vec<serde_json::Value> = texts
                .iter()
                .zip(&ids)
                .map(|(t, id)| serde_json::json!({"id": id, "text": t}))
                .collect();
            let body = serde_json::json!({"question": question, "chunks": chunks});
            let request = parse_request(&serde_json::to_vec(&body).expect("encode"), "in").expect("valid");
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            for strategy in [
                crate::Strategy::Grade { threshold: 4.0 },
                crate::Strategy::Keep { threshold: 0.5 },
                crate::Strategy::BudgetSelect { extra: 2, threshold: 0.5 },
                crate::Strategy::TopN { n: 2 },
            ] {
                let options = crate::PruneOptions { strategy, ..crate::PruneOptions::default() };
                let judge = treenav_judge::Judge::new(&treenav_judge::JudgeOptions::default()).expect("judge");
                let pruner = crate::Pruner::new(judge, options).expect("pruner");
                let question = request.question.clone().unwrap_or_default();
                match runtime.block_on(pruner.prune(&question, &request.chunks)) {
                    Ok(p) => prop_assert!(p.kept.len() <= request.chunks.len()),
                    Err(e) => prop_assert!(matches!(e, Error::Input(_)), "{}", e),
                }
            }
        }

        /// Any JSON, shaped like a request or not: the same.
        #[test]
        fn any_json_parses_or_fails_cleanly(value in json_value()) {
            let bytes = serde_json::to_vec(&value).expect("encode");
            match parse_request(&bytes, "in") {
                Ok(r) => prop_assert!(r.chunks.iter().all(|c| !c.id.is_empty())),
                Err(e) => prop_assert!(e.to_string().starts_with("bad prune input: in:"), "{}", e),
            }
        }
    }
}

//! Outputs never overwrite inputs: every path a command writes (`-o`,
//! `--json`, `--run-dir`, `--curve-csv`, `--curve-svg`) is refused, before
//! any work, when it is one of the run's inputs, lies inside an input
//! folder, or is a file of an input tree (`T` or a side file `T.*`). Paths
//! are compared resolved (symlinks, `..`), the output by its folder since it
//! may not exist yet.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// `path` resolved; one that does not exist yet by its folder.
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let folder = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Some(folder.canonicalize().ok()?.join(path.file_name()?))
}

/// Refuses `output` (given by `flag`) when it is `input` (`what` names it),
/// lies inside it, or is a side file of it (`input.*` beside it).
pub fn refuse_over(flag: &str, output: &Path, what: &str, input: &Path) -> Result<()> {
    let Ok(input) = input.canonicalize() else {
        return Ok(()); // a missing input fails later, naming the path
    };
    let Some(output) = resolved(output) else {
        return Ok(());
    };
    let side_file = input.is_file()
        && output.parent() == input.parent()
        && match (output.file_name(), input.file_name()) {
            (Some(o), Some(i)) => o
                .to_string_lossy()
                .starts_with(&format!("{}.", i.to_string_lossy())),
            _ => false,
        };
    if output == input || output.starts_with(&input) || side_file {
        let how = match (output == input, side_file) {
            (true, _) => "is",
            (false, true) => "is a file of",
            (false, false) => "is inside",
        };
        bail!(
            "{flag} {} {how} {what} {}: writing it would overwrite an input of this run; write it elsewhere",
            output.display(),
            input.display()
        );
    }
    Ok(())
}

/// Writes `text` to `path` through a temporary file in the same folder.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    treenav::files::atomic::write(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_on_an_input_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("dir");
        let corpus = data.join("corpus.jsonl");
        std::fs::write(&corpus, "{}").expect("write");
        let tree = dir.path().join("t.tree");
        std::fs::write(&tree, "x").expect("write");
        let e = refuse_over("--json", &corpus, "the dataset", &data).expect_err("inside");
        assert!(e.to_string().contains("--json"), "{e}");
        assert!(refuse_over("--json", &data.join("new.json"), "the dataset", &data).is_err());
        assert!(refuse_over("--json", &tree, "the tree", &tree).is_err());
        assert!(refuse_over(
            "--json",
            &dir.path().join("t.tree.texts"),
            "the tree",
            &tree
        )
        .is_err());
        let via = dir.path().join("data/../t.tree");
        assert!(refuse_over("--json", &via, "the tree", &tree).is_err());
        refuse_over("--json", &dir.path().join("out.json"), "the tree", &tree).expect("elsewhere");
        refuse_over("--json", &dir.path().join("t.treeX"), "the tree", &tree)
            .expect("another name");
    }
}

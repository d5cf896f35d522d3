//! Running a Python package's pytest suite from a Rust test: probe the
//! interpreter for what the suite imports, skip with one line a person
//! sees when it lacks them (fail in CI, where `.ci/run` installs them),
//! else run the suite with this package's `treenav` binary.

use std::path::Path;
use std::process::Command;

fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `$TREENAV_PYTHON`, default `python3`.
pub fn python() -> String {
    std::env::var("TREENAV_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Why `probe` (Python source) fails under `python`, if it does: the last
/// line of its error.
pub fn missing(python: &str, probe: &str) -> Option<String> {
    match Command::new(python).args(["-c", probe]).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .to_string(),
        ),
        Err(e) => Some(e.to_string()),
    }
}

/// Skips (`what` names the suite, `hint` how to install its needs) when
/// `why` is some: returns whether the caller should stop. In CI a skip is
/// a failure.
pub fn skip(what: &str, hint: &str, why: Option<String>) -> bool {
    let Some(why) = why else { return false };
    assert!(
        !in_ci(),
        "CI needs the {what}'s dependencies ({hint}): {why}"
    );
    eprintln!("SKIPPED {what}: {why} ({hint})");
    true
}

/// Runs `pytest tests` in `package` (a folder under the repository) with
/// `src` on the path and `TREENAV_BIN` set; fails with its output.
pub fn run(python: &str, package: &str, env: &[(&str, &str)]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(package);
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(&dir)
        .env("TREENAV_BIN", env!("CARGO_BIN_EXE_treenav"))
        .env("PYTHONPATH", dir.join("src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run pytest");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest failed:\n{report}");
    eprintln!("{}", report.lines().last().unwrap_or(""));
}

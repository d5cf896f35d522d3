//! The Ray driver (`clients/ray`) builds through a real local Ray cluster
//! (a head and a worker on 127.0.0.1, started by its pytest suite) the
//! one-process build's tree, byte for byte, also when a worker process
//! dies mid-build; and serves a tree built in parts as one on Ray Serve
//! (`test_serve.py`). Needs a Python with ray (with Serve), onnxruntime,
//! tokenizers, xxhash, aiohttp and pytest (`$TREENAV_PYTHON`, default
//! `python3`) and bge-small-en in the model cache; without them the test
//! skips with a message, and fails in CI, where `.ci/run` installs them.

#[path = "support/pytest.rs"]
mod pytest;

#[test]
fn the_ray_build_equals_the_one_process_build() {
    let python = pytest::python();
    let probe = "import pytest, ray, ray.serve, onnxruntime, tokenizers, xxhash, aiohttp, shutil; \
                 assert shutil.which('ray'), 'no ray command on PATH'";
    let why =
        pytest::missing(&python, probe).or_else(|| treenav::tree::bge_small_available().err());
    let hint = "pip install './clients/ray[test,serve]' and bash scripts/fetch-models.sh";
    if pytest::skip("Ray build and serve tests", hint, why) {
        return;
    }
    pytest::run(&python, "clients/ray", &[("RAY_USAGE_STATS_ENABLED", "0")]);
}

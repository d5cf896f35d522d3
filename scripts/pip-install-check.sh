#!/usr/bin/env bash
# The one install for Python users, as a new user runs it: `pip install ./`
# into a fresh venv (maturin builds the `treenav` binary; the Python client
# comes with it), then the README's main job through the installed
# `treenav`, from a folder outside the checkout, and the client imported.
# Used by .ci/run; run it by hand the same way: bash scripts/pip-install-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check ./
work="$(mktemp -d)"
trap 'rm -rf "$work" "$(dirname "$venv")"' EXIT
(
    cd "$work"
    "$venv/bin/treenav" build -o sample.tree
    "$venv/bin/treenav" query sample.tree "Where did Tesla work after leaving Edison's company?" --top 3 > answer.txt
    grep -q "Nikola Tesla" answer.txt || { cat answer.txt; echo "the installed treenav did not find Tesla" >&2; exit 1; }
    "$venv/bin/python" -c "import treenav_client, treenav_client.metadata; print('treenav_client', treenav_client.__name__, 'imports')"
)
echo "pip install ./: the installed treenav built and queried the sample; the client imports"

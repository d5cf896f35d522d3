"""Writes one fitted model into crates/judge/src/fitted.json, the one home of every fitted model
(crates/judge/src/fitted.rs reads it at compile time): the fitting scripts call `write_entry`
when given `--write PATH`, so the shipped weights are the ones the script printed."""
import json
import os
import sys
import tempfile


def write_entry(path, section, model, embedder="bge-small-en", judge=None):
    """Replaces the model (and the command that refits it) of the entry for `embedder` (and
    `judge`) in `section`, keeping what it says it was fitted on; writes to a temporary file
    beside the table and renames it over, so a failed write leaves the table as it was."""
    with open(path) as f:
        tables = json.load(f)
    entries = tables.setdefault(section, [])
    entry = next((e for e in entries if e.get("embedder") == embedder and e.get("judge") == judge), None)
    if entry is None:
        entry = {"embedder": embedder, "fitted_on": "say what this was fitted on"}
        if judge is not None:
            entry["judge"] = judge
        entries.append(entry)
    args = ["crates/judge/src/fitted.json" if a == path else a for a in sys.argv[1:]]
    entry["refit"] = " ".join(["python3", "scripts/" + os.path.basename(sys.argv[0])] + args)
    entry["model"] = {k: round(v, 4) for k, v in model.items()}
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        json.dump(tables, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(out.name, path)
    print(f"wrote {section} for {embedder}{' and ' + judge if judge else ''} into {path}")

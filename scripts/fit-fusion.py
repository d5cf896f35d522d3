#!/usr/bin/env python3
"""Fits the exploration's fusion: a logistic model of P(relevant) over a passage's evidence.

    python3 scripts/fit-fusion.py [--form FORM] TRAIN.jsonl [TRAIN.jsonl ...] [--test TEST.jsonl ...] [--write crates/judge/src/fitted.json]

Each file comes from `treenav bench --dataset D --tree T --systems tree --evidence FILE` on a
split that is no test split (docs/calibration.md). Every file weighs the same in the fit
(each of its queries alike), so one large set does not decide the weights alone. Prints the
fitted weights (with `--write`, into their entry of crates/judge/src/fitted.json, the one home of
every fitted model: what ships is what this prints) and, per file, the top-10
expected calibration error, passage P@1 and passage nDCG@10 of the judged passages in the
order of the centred fusion (the shipped default before the fit) and of the fitted model.
The model: P = σ(bias + judge · J + graph · G + peak · g + g · (Σ wᵢ · lexical partᵢ)), g the
query's lexical gate: by default (`SHIPPED`) π · coverage · agreement — how sharply BM25 singles
out its best passages, how many judged passages it matched (over ten), and how high the judge
ranks BM25's best (`query_context`); `--form` fits another of `FORMS`. Pure Python: Newton's method with a small L2 penalty.

    python3 scripts/fit-fusion.py --loco A.jsonl B.jsonl C.jsonl [...]

leaves one collection out (issue #65): for each candidate form of the lexical gate (`FORMS`)
and each file, fits on the others and measures the one left out against the judge (the
embedding) alone, and prints the worst held-out file per form: a user's corpus is never a
training set, so the form is chosen by its worst collection, not its mean.

    python3 scripts/fit-fusion.py --cascade TRAIN.jsonl [...] [--test TEST.jsonl ...] [--write PATH]

fits the cascade's model instead (the `cascade` entry of fitted.json): files from the same bench with a judge
after the exploration (`--judge cross-encoder --judge-budgets N --always-judge`), whose lines also carry
what both stages said (`explored`, `reached`, `judged`), the query's form (`question`) and whether the
passages the judge read are sentence-sized (`short`). The model orders the judged passages by
zₑ + α · zⱼ, the judge's weight α = judged + judged_gap · g + judged_question · q + judged_short · s
(g the query's gap: the judge's best logit less its second best; q 1 for a question; s 1 over
sentence-sized passages), among the places the exploration gave them; each takes the exploration's
P at its new place, and nothing the judge did not read moves. α is searched on a grid (`GRID`) for the weights
whose worst training file loses least nDCG@10 against the better of the two stages alone (the
exploration's order; the judge's order in the same places); a leave-one-collection-out table comes
first. Prints per file the same measures for the exploration alone, the judge's order and the
fitted cascade.
"""
import collections
import itertools
import json
import math
import sys

from fitted_json import write_entry

PARTS = ["judge", "lexical_document", "graph", "lexical_passage", "bm25_share"]
LEXICAL = {"lexical_document", "lexical_passage", "bm25_share"}
WEIGHTS = ["bias"] + PARTS + ["lexical_peak"]  # the order of `FittedFusion`'s fields
L2 = 1e-3
CENTRED_WEIGHT = 2.0  # --explore-fusion's default: the centred fusion this fit replaces


def sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def by_query(path, item, hint=""):
    """A file's lines as item(row) lists by query; item returns None to skip a line.
    A line that does not parse stops the script naming file, line and field."""
    queries = collections.OrderedDict()
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"{path}: {e.strerror} (an evidence file of `treenav bench --evidence`)")
    with f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
                x = item(row)
            except (KeyError, TypeError, ValueError) as e:
                sys.exit(f"{path}:{n}: {e}{hint}")
            if x is not None:
                queries.setdefault(row["query"], []).append(x)
    return queries


def solve(a, b):
    """Solves a x = b (Gaussian elimination with partial pivoting)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c and m[c][c] != 0:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def fit(sets, top=None):
    """Logistic regression over every judged passage (each set weighing the same), then the
    same weights scaled and shifted (Platt) on each query's top `top` by the fitted score:
    the order is the first fit's, the probability is calibrated where users read it."""
    w = newton([[(x, y) for v in q.values() for x, y, _ in v] for q in sets])
    if top is None:
        return w
    heads = []
    for queries in sets:
        head = []
        for v in queries.values():
            z = sorted(((sum(a * b for a, b in zip(w, x)), y) for x, y, _ in v), key=lambda t: -t[0])
            head.extend(([1.0, s], y) for s, y in z[:top])
        heads.append(head)
    b, a = newton(heads)
    return [a * wi + (b if i == 0 else 0.0) for i, wi in enumerate(w)]


def newton(sets):
    """Weighted logistic regression by Newton's method: every set weighs the same."""
    rows = []
    for examples in sets:
        weight = 1.0 / max(1, len(examples))
        rows.extend((x, y, weight) for x, y in examples)
    w = [0.0] * len(rows[0][0])
    for _ in range(50):
        grad = [L2 * wi for wi in w]
        hess = [[L2 if i == j else 0.0 for j in range(len(w))] for i in range(len(w))]
        for x, y, s in rows:
            p = sigmoid(sum(a * b for a, b in zip(w, x)))
            g, h = s * (p - y), s * p * (1 - p)
            for i, xi in enumerate(x):
                grad[i] += g * xi
                hi = hess[i]
                for j in range(i + 1):
                    hi[j] += h * xi * x[j]
        for i in range(len(w)):
            for j in range(i):
                hess[j][i] = hess[i][j]
        step = solve(hess, grad)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-7:
            break
    return w


def centred(v):
    """The centred fusion's scores of one query's passages (the default before a fit)."""
    parts = [(r[1] + r[2] + r[3]) / 3.0 for _, _, r in v]
    mean = sum(sorted(parts)) / len(parts)
    return [sigmoid(r[0] + CENTRED_WEIGHT * (e - mean)) for (_, _, r), e in zip(v, parts)]


def fitted(w):
    return lambda v: [sigmoid(sum(a * b for a, b in zip(w, x))) for x, _, _ in v]


def measure(queries, score):
    """The top-10 ECE, P@1 and nDCG@10 of the judged passages of one file under a scoring."""
    pairs = []
    for v in queries.values():
        pairs.extend(sorted(zip(score(v), (y for _, y, _ in v)), key=lambda t: -t[0])[:10])
    bins = collections.defaultdict(list)
    for s, y in pairs:
        bins[min(9, int(s * 10))].append((s, y))
    ece = sum(abs(sum(s for s, _ in b) - sum(y for _, y in b)) for b in bins.values()) / len(pairs)
    p1, ndcg = scores(queries, score)
    return f"ECE {ece:.3f}, P@1 {p1:.3f}, P nDCG@10 (judged) {ndcg:.3f}"


def load_stages(path):
    """One file's passages as (zₑ, reached, zⱼ or None, relevant, question, short), by query."""

    def item(row):
        judged = row["judged"]
        return (
            float(row["explored"]),
            bool(row["reached"]),
            None if judged is None else float(judged),
            1.0 if row["relevant"] else 0.0,
            bool(row["question"]),
            bool(row["short"]),
        )

    return by_query(path, item, " (a file from a bench with a judge after the exploration, treenav 0.77 or later?)")


def exploration(v):
    return [sigmoid(item[0]) if item[1] else None for item in v]


# `FittedCascade`'s fields. The model orders the judged passages only (each takes the
# exploration's P at its new place), so only the judge's weight against the exploration's
# counts: `explored` is 1, `bias` and `gap` 0, and the judge's weight per logit
# judged + judged_gap · g + judged_question · q + judged_short · s is searched on `GRID`.
CASCADE = ["bias", "explored", "judged", "judged_gap", "judged_question", "judged_short", "gap"]
GRID = {
    "judged": [0.0, 0.05, 0.1],
    "judged_gap": [0.0, 0.03, 0.05, 0.08],
    "judged_question": [0.0, 0.2, 0.3, 0.4, 0.5, 0.7],
    "judged_short": [0.0, 0.5, 1.0, 1.5, 2.0, 3.0],
}
JUDGE_ONLY = {"judged": 1e3, "judged_gap": 0.0, "judged_question": 0.0, "judged_short": 0.0}


def judge_gap(v):
    """The judge's best logit less its second best over one query's judged passages."""
    z = sorted((item[2] for item in v if item[2] is not None), reverse=True)
    return z[0] - z[1] if len(z) > 1 else 0.0


def cascade(w):
    """The judged passages ordered by the judge's weight `w` (a dict of `GRID`'s names) times
    its logit plus the exploration's, in the exploration's slots for them."""

    def score(v):
        g = judge_gap(v)
        out = [sigmoid(item[0]) for item in v]
        judged = [i for i, item in enumerate(v) if item[2] is not None]
        slots = sorted((v[i][0] for i in judged), reverse=True)
        question, short = (v[0][4], v[0][5]) if v else (False, False)
        alpha = (w["judged"] + w["judged_gap"] * g + (w["judged_question"] if question else 0.0)
                 + (w["judged_short"] if short else 0.0))
        model = {i: v[i][0] + alpha * v[i][2] for i in judged}
        for i, ze in zip(sorted(judged, key=lambda i: (-model[i], i)), slots):
            out[i] = sigmoid(ze)
        return out

    return score


def measure_stages(queries, score, numbers=False):
    """`measure` where a passage scored None is not in the list (its gold still counts)."""
    listed = collections.OrderedDict()
    for q, v in queries.items():
        listed[q] = [(s, item[3]) for s, item in zip(score(v), v) if s is not None]
    ideal = {q: sum(item[3] for item in v) for q, v in queries.items()}
    return measure_with_ideal(listed, ideal, numbers)


def measure_with_ideal(listed, ideal, numbers=False):
    pairs, p1, ndcg = [], 0.0, 0.0
    for q, order in listed.items():
        order = sorted(order, key=lambda t: -t[0])
        pairs.extend(order[:10])
        p1 += order[0][1] if order else 0.0
        dcg = sum(y / math.log2(i + 2) for i, (_, y) in enumerate(order[:10]))
        best = sum(1 / math.log2(i + 2) for i in range(min(10, int(ideal[q]))))
        ndcg += dcg / best if best else 0.0
    bins = collections.defaultdict(list)
    for s, y in pairs:
        bins[min(9, int(s * 10))].append((s, y))
    ece = sum(abs(sum(s for s, _ in b) - sum(y for _, y in b)) for b in bins.values()) / max(1, len(pairs))
    n = max(1, len(listed))
    if numbers:
        return p1 / n, ndcg / n
    return f"ECE {ece:.3f}, P@1 {p1 / n:.3f}, P nDCG@10 (judged) {ndcg / n:.3f}"


def grid():
    names = list(GRID)
    for values in itertools.product(*(GRID[n] for n in names)):
        yield dict(zip(names, values))


def stages_alone(queries):
    """(P@1, nDCG@10) of the exploration alone and of the judge's order in the same places."""
    return (measure_stages(queries, exploration, numbers=True),
            measure_stages(queries, cascade(JUDGE_ONLY), numbers=True))


def regrets(queries, alone, weights):
    """For each weights in `weights`: nDCG@10 of the cascade less the better of its two stages
    alone (`alone`, from `stages_alone`), and its (P@1, nDCG@10)."""
    alone = max(nd for _, nd in alone)
    out = []
    for w in weights:
        p1, nd = measure_stages(queries, cascade(w), numbers=True)
        out.append((nd - alone, (p1, nd)))
    return out


def choose(weights, table, sets):
    """The index in `weights` whose worst set (of the `sets` indices into `table`, one row of
    `regrets` per set) loses least against the better stage alone; ties go to the smaller
    weights (fewer, smaller say generalises)."""
    return max(range(len(weights)), key=lambda k: (round(min(table[i][k][0] for i in sets), 4),
                                                   -sum(weights[k].values())))


def loco_cascade(train, alone, weights, table):
    """Leave one collection out: the weights chosen on the others, measured on the one left out."""
    print("Leave one collection out: weights chosen on the others, measured on the one left out")
    print("| held out | exploration alone P@1 / nDCG@10 | judge's order | chosen on the others | cascade | against the better stage |")
    print("|---|---|---|---|---|---|")
    for i, path in enumerate(train):
        k = choose(weights, table, [j for j in range(len(train)) if j != i])
        loss, (p1, nd) = table[i][k]
        e, j = alone[i]
        print(f"| {path} | {e[0]:.3f} / {e[1]:.3f} | {j[0]:.3f} / {j[1]:.3f} | "
              + ", ".join(f"{n} {v}" for n, v in weights[k].items()) + f" | {p1:.3f} / {nd:.3f} | {loss:+.3f} |")


def main_cascade(train, test, write=None):
    sets = [load_stages(p) for p in train]
    weights = list(grid())
    alone = [stages_alone(q) for q in sets]
    table = [regrets(q, a, weights) for q, a in zip(sets, alone)]
    if len(sets) > 1:
        loco_cascade(train, alone, weights, table)
    chosen = weights[choose(weights, table, range(len(sets)))]
    w = {"bias": 0.0, "explored": 1.0, **chosen, "gap": 0.0}
    print("fitted cascade: " + ", ".join(f"{n} {w[n]:.4f}" for n in CASCADE))
    if write:
        write_entry(write, "cascade", {n: w[n] for n in CASCADE}, judge="cross-encoder")
    for path, queries in list(zip(train, sets)) + [(p, load_stages(p)) for p in test]:
        items = [i for v in queries.values() for i in v]
        judged = sum(1 for i in items if i[2] is not None)
        unreached = sum(1 for i in items if not i[1])
        questions = sum(1 for v in queries.values() if v and v[0][4])
        short = sum(1 for v in queries.values() if v and v[0][5])
        print(f"{path} ({len(queries)} queries, {questions} questions, {short} over sentence-sized passages, {judged} judged,"
              f" {unreached} the exploration did not reach"
              f"{', not in the fit' if path in test else ''})")
        print(f"  exploration alone: {measure_stages(queries, exploration)}")
        print(f"  judge's order:     {measure_stages(queries, cascade(JUDGE_ONLY))}")
        print(f"  fitted cascade:    {measure_stages(queries, cascade(chosen))}")


def query_context(rows):
    """What one query's judged passages say of BM25 as a whole: its peak π, its coverage (how
    many judged passages match a query term, over ten, at most 1: π is 1 when fewer than ten
    match, however few) and its agreement with the judge (2·σ(z of BM25's best − the judge's
    best z), 1 when the judge ranks BM25's best first, 0 when BM25 matched nothing)."""
    matched = [r for r in rows if r["bm25_share"] > 0]
    best_z = max(r["judge"] for r in rows)
    agree = 2.0 * sigmoid(max(matched, key=lambda r: r["bm25_share"])["judge"] - best_z) if matched else 0.0
    return {"peak": rows[0]["lexical_peak"], "coverage": min(1.0, len(matched) / 10.0), "agree": agree}


# Candidate forms of the lexical gate g (the lexical parts weigh g · wᵢ, and g has a weight of
# its own); `SHIPPED` names the one the Rust model computes (chosen by `--loco`).
FORMS = {
    "peak": lambda c: c["peak"],
    "peak*coverage": lambda c: c["peak"] * c["coverage"],
    "peak*agree": lambda c: c["peak"] * c["agree"],
    "peak*coverage*agree": lambda c: c["peak"] * c["coverage"] * c["agree"],
}
SHIPPED = "peak*coverage*agree"  # the form `FittedFusion` computes


def load_form(path, gate):
    """A file's passages as `load` gives them, the lexical parts gated by `gate(context)`."""
    raw = by_query(path, lambda row: None if row.get("reached") is False else row)
    out = collections.OrderedDict()
    for q, rows in raw.items():
        g = gate(query_context(rows))
        out[q] = [
            (
                [1.0] + [float(r[p]) * (g if p in LEXICAL else 1.0) for p in PARTS] + [g],
                1.0 if r["relevant"] else 0.0,
                [float(r[p]) for p in PARTS],
            )
            for r in rows
        ]
    return out


def scores(queries, score):
    """(P@1, P nDCG@10 of the judged) of one file under a scoring."""
    p1 = ndcg = 0.0
    for v in queries.values():
        order = sorted(zip(score(v), (y for _, y, _ in v)), key=lambda t: -t[0])
        p1 += order[0][1] if order else 0.0
        dcg = sum(y / math.log2(i + 2) for i, (_, y) in enumerate(order[:10]))
        ideal = sum(1 / math.log2(i + 2) for i in range(min(10, int(sum(y for _, y, _ in v)))))
        ndcg += dcg / ideal if ideal else 0.0
    n = max(1, len(queries))
    return p1 / n, ndcg / n


def judge_alone(v):
    return [r[0] for _, _, r in v]


def main_loco(paths):
    """Leave one collection out: for each form, fit on all files but one and measure the one
    left out; the form whose worst held-out file loses least against the judge alone wins."""
    worst = {}
    print("| held out | judge alone P@1 / nDCG@10 | " + " | ".join(FORMS) + " |")
    print("|---|---|" + "---|" * len(FORMS))
    loaded = {name: [load_form(p, gate) for p in paths] for name, gate in FORMS.items()}
    for i, path in enumerate(paths):
        base = scores(loaded["peak"][i], judge_alone)
        cells = []
        for name in FORMS:
            sets = loaded[name]
            w = fit([s for j, s in enumerate(sets) if j != i], top=10)
            p1, nd = scores(sets[i], fitted(w))
            worst[name] = min(worst.get(name, math.inf), nd - base[1])
            cells.append(f"{p1:.3f} / {nd:.3f} ({nd - base[1]:+.3f})")
        print(f"| {path} | {base[0]:.3f} / {base[1]:.3f} | " + " | ".join(cells) + " |")
    print("| worst held-out nDCG@10 against the judge alone | | "
          + " | ".join(f"{worst[n]:+.3f}" for n in FORMS) + " |")
    for name, gate in FORMS.items():
        w = fit(loaded[name], top=10)
        print(f"{name} fitted on all: " + ", ".join(f"{n} {v:.4f}" for n, v in zip(WEIGHTS, w)))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    args = sys.argv[1:]
    write = None
    if "--write" in args:
        at = args.index("--write")
        if at + 1 >= len(args):
            sys.exit("--write needs the path of fitted.json (crates/judge/src/fitted.json)")
        write, args = args[at + 1], args[:at] + args[at + 2 :]
    if args[0] == "--loco":
        return main_loco(args[1:])
    if args[0] == "--cascade":
        args = args[1:]
        cut = args.index("--test") if "--test" in args else len(args)
        return main_cascade(args[:cut], args[cut + 1 :], write)
    form = SHIPPED
    if args[0] == "--form":
        form, args = args[1], args[2:]
    if form not in FORMS:
        sys.exit(f"--form {form}: one of {', '.join(FORMS)}")
    cut = args.index("--test") if "--test" in args else len(args)
    train, test = args[:cut], args[cut + 1 :]

    sets = [load_form(p, FORMS[form]) for p in train]
    w = fit(sets, top=10)
    print("fitted: " + ", ".join(f"{n} {v:.4f}" for n, v in zip(WEIGHTS, w)))
    if write:
        write_entry(write, "fusion", dict(zip(WEIGHTS, w)))
    for path, queries in list(zip(train, sets)) + [(p, load_form(p, FORMS[form])) for p in test]:
        print(f"{path} ({len(queries)} queries{', not in the fit' if path in test else ''})")
        print(f"  centred (weight {CENTRED_WEIGHT}): {measure(queries, centred)}")
        print(f"  fitted:               {measure(queries, fitted(w))}")


if __name__ == "__main__":
    main()

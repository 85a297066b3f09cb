"""Writes the synthetic PLR comparison data (benches/peers.rs `plr`, plr_diffprivlib.py).

    python3 benches/peers/plr_data.py 50000 100 /tmp/plr.bin

Train and test sets of n rows each, d features: x ~ N(0, I)/sqrt(d) scaled so ‖x‖ ≤ 1 (rows
projected onto the unit ball), labels 1 with probability sigmoid(4·wᵀx·sqrt(d)) for a fixed
w ~ N(0, I)/‖·‖. Layout (float64 little-endian): train x (n·d, row-major), train y (n, 0/1),
test x, test y.
"""
import sys

import numpy as np

n, d, path = int(float(sys.argv[1])), int(float(sys.argv[2])), sys.argv[3]
rng = np.random.default_rng(7)
w = rng.standard_normal(d)
w /= np.linalg.norm(w)


def draw(rows):
    x = rng.standard_normal((rows, d)) / np.sqrt(d)
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1))[:, None]
    p = 1.0 / (1.0 + np.exp(-4.0 * np.sqrt(d) * (x @ w)))
    y = (rng.uniform(size=rows) < p).astype(np.float64)
    return x, y


with open(path, "wb") as f:
    for part in (*draw(n), *draw(n)):
        f.write(np.ascontiguousarray(part, dtype="<f8").tobytes())

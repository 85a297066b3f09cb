"""numpy peer for one full-mode DCA round (examples/dca_table1.rs, `--mode full`).

    python3 benches/peers/dca_round.py 100000 10000

N clients, d values each uniform in [-1, 1), M = 10 compute nodes, the same fixed point as
dpdist (2^f units, f chosen so that N·bound·2^f stays below 2^62; values rounded to int64 and
held as uint64 in Z_2^64). Each client draws M − 1 uniform 64-bit masks (numpy's PCG64
`random_raw`, not a CSPRNG: this is a speed peer, not a secure implementation), sends them to
nodes 1..M−1 and its encoded vector minus their sum to node 0; every node adds what it receives
(wrapping uint64 arithmetic); the M node sums are added and decoded. Clients are processed in
batches so memory stays O(batch·M·d). Prints the wall time of the round and checks the result
against the plain sum. Not part of the test command; needs numpy.
"""
import sys
import time

import numpy as np

n, d = int(float(sys.argv[1])), int(float(sys.argv[2]))
m, bound, batch = 10, 1.0, 256
frac_bits = 62 - int(np.ceil(np.log2(n * bound + 1)))
scale = float(2**frac_bits)
rng = np.random.default_rng(1)
bits = np.random.PCG64(2)

start = time.perf_counter()
nodes = np.zeros((m, d), dtype=np.uint64)
plain = np.zeros(d, dtype=np.int64)
for first in range(0, n, batch):
    rows = min(batch, n - first)
    x = rng.uniform(-bound, bound, (rows, d))
    units = np.rint(x * scale).astype(np.int64)
    plain += units.sum(axis=0)
    encoded = units.view(np.uint64)
    masks = bits.random_raw((m - 1) * rows * d).reshape(m - 1, rows, d).astype(np.uint64, copy=False)
    balancing = encoded - masks.sum(axis=0, dtype=np.uint64)
    nodes[0] += balancing.sum(axis=0, dtype=np.uint64)
    nodes[1:] += masks.sum(axis=1, dtype=np.uint64)
total = nodes.sum(axis=0, dtype=np.uint64).view(np.int64)
released = total / scale
seconds = time.perf_counter() - start
exact = bool(np.array_equal(total, plain))
print(f"numpy full-mode round N={n} d={d} M={m}: {seconds:.2f} s, exact {exact}")

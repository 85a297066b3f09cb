"""numpy peer for the sufficient statistics XᵀX (benches/peers.rs `gram`).

    OPENBLAS_NUM_THREADS=1 python3 benches/peers/gram.py 100000 1000

Times `X.T @ X` (numpy dispatches it to BLAS syrk, the symmetric rank-k update) on an n×d
row-major float64 matrix uniform in [-1, 1); prints the median of 3 runs. Not part of the
test command; needs numpy.
"""
import sys
import time

import numpy as np

n, d = int(float(sys.argv[1])), int(float(sys.argv[2]))
x = np.random.default_rng(1).uniform(-1.0, 1.0, (n, d))
times = []
for _ in range(3):
    t = time.perf_counter()
    g = x.T @ x
    times.append(time.perf_counter() - t)
times.sort()
print(f"numpy X.T @ X  n={n} d={d}: median {times[1]:.3f} s (min {times[0]:.3f}), trace {np.trace(g):.6e}")

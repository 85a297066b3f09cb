#!/usr/bin/env python3
"""numpy's X.T @ X and X.T @ y on the sizes of docs/src/results/silo-statistics.md.

The yardstick for dpdist's `RecordSum` (crates/blr/examples/silo_gram.rs): same n, d, the same
value recipe (uniform in [-1, 1), so the same operation on the same sizes; the values themselves
need not match), timed around the products only (generation excluded), median of --reps.

    python3 scripts/bench-gram-numpy.py --n 1000000 --d 100 --reps 5
    python3 scripts/bench-gram-numpy.py --csv rows.csv --y y   # loadtxt + products

Prints one line per repetition and a final `median_s` line. NON-PRIVATE: a speed measurement.
"""
import argparse
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--csv", help="read this CSV (header row) with np.loadtxt instead of generating")
    p.add_argument("--y", default="y", help="name of the target column in --csv")
    a = p.parse_args()

    def products(x, y):
        xx = x.T @ x  # numpy hands A.T @ A to BLAS syrk (one triangle, mirrored)
        xy = x.T @ y
        return xx, xy

    times = []
    if a.csv:
        for r in range(a.reps):
            t0 = time.perf_counter()
            with open(a.csv) as f:
                names = f.readline().strip().split(",")
            t = np.loadtxt(a.csv, delimiter=",", skiprows=1, dtype=np.float64)
            j = names.index(a.y)
            y = np.ascontiguousarray(t[:, j])
            x = np.ascontiguousarray(np.delete(t, j, axis=1))
            del t
            xx, xy = products(x, y)
            dt = time.perf_counter() - t0
            times.append(dt)
            print(f"rep {r}: {dt:.4f} s  (n {x.shape[0]}, d {x.shape[1]}, loadtxt + products)", flush=True)
    else:
        rng = np.random.default_rng(1)
        x = rng.uniform(-1.0, 1.0, size=(a.n, a.d))
        y = rng.uniform(-1.0, 1.0, size=a.n)
        products(x[:1000], y[:1000])  # warm the BLAS threads
        for r in range(a.reps):
            t0 = time.perf_counter()
            xx, xy = products(x, y)
            dt = time.perf_counter() - t0
            times.append(dt)
            print(f"rep {r}: {dt:.4f} s  (n {a.n}, d {a.d}, X.T@X + X.T@y)", flush=True)
    flops = 2.0 * (xx.shape[0] ** 2) * (x.shape[0])  # counted as a full GEMM, d^2 n FMAs
    med = float(np.median(times))
    print(f"median_s {med:.4f}  gemm-equivalent GFLOP/s {flops / med / 1e9:.1f}  "
          f"(syrk does half: {flops / 2 / med / 1e9:.1f} real)")


if __name__ == "__main__":
    main()

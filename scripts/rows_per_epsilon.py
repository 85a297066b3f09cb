#!/usr/bin/env python3
"""The table of docs/src/privacy-rows-per-epsilon.md: rows n at which the diagonal statistic
sum_i x_ij^2 ~ n E[x_j^2] is k times the noise sd of the statistics round, for unit-norm rows
(c = 1, E[x_j^2] = 1/d), d = 10, delta = 1e-5, all of epsilon on the statistics.

s(eps, delta) = sigma / Delta of the analytic Gaussian mechanism (Balle & Wang 2018), by bisection
on Phi(1/2s - eps s) - e^eps Phi(-1/2s - eps s) <= delta, with the standard library only (the
same condition dp-noise solves, computed independently of it).

    python3 scripts/rows_per_epsilon.py
"""
import math


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def s_analytic(eps, delta):
    lo, hi = 1e-9, 1e9
    for _ in range(300):
        mid = math.sqrt(lo * hi)
        if phi(1 / (2 * mid) - eps * mid) - math.exp(eps) * phi(-1 / (2 * mid) - eps * mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def main():
    d, delta, c = 10, 1e-5, 1.0
    delta2 = c * c * math.sqrt(d * (2 * d + 3))
    ex2 = 1.0 / d
    print(f"Delta_2 = {delta2:.2f} (d = {d}, c = {c})")
    print("| ε | s(ε, 10⁻⁵) | σ of each entry | n for k = 1 | n for k = 10 |")
    print("| --- | --- | --- | --- | --- |")
    for eps in [0.1, 0.25, 0.5, 1, 2, 5, 10]:
        s = s_analytic(eps, delta)
        sigma = s * delta2
        n1 = sigma / ex2
        print(f"| {eps} | {s:.2f} | {sigma:.1f} | {n1:.0f} | {10 * n1:.0f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Independent reference values for dp-noise's RDP accountant (crates/dp-noise/src/rdp).

Computes the Rényi divergences of the Poisson-subsampled Gaussian by numerical integration
with mpmath (50 digits), not by the series the Rust code sums:
  mu0 = N(0, z^2), mu1 = N(1, z^2), mu = (1-q) mu0 + q mu1,
  A   = E_{mu0}[(mu/mu0)^alpha],   B = E_{mu}[(mu0/mu)^alpha],
  RDP = max(ln A, ln B)/(alpha - 1)   (Mironov-Talwar-Zhang 2019 show ln A >= ln B).
Usage: python3 scripts/rdp_reference.py   (needs only mpmath)
"""
import mpmath

mpmath.mp.dps = 50


def rdp(q, z, alpha):
    q, z, alpha = mpmath.mpf(q), mpmath.mpf(z), mpmath.mpf(alpha)

    def ratio(x):  # mu(x)/mu0(x)
        return (1 - q) + q * mpmath.exp((2 * x - 1) / (2 * z * z))

    def a_fn(x):
        return mpmath.npdf(x, 0, z) * ratio(x) ** alpha

    def b_fn(x):
        mu = mpmath.npdf(x, 0, z) * ratio(x)
        return mu * (1 / ratio(x)) ** alpha

    # Split at the points where the integrands' mass sits for accuracy.
    pts = [-mpmath.inf, -20 * z, -5 * z, 0, 0.5, 1, 5 * z + alpha, 20 * z + 2 * alpha, mpmath.inf]
    a = mpmath.quad(a_fn, pts)
    b = mpmath.quad(b_fn, pts)
    return max(mpmath.log(a), mpmath.log(b)) / (alpha - 1)


if __name__ == "__main__":
    for q, z, alpha in [
        (0.01, 2.5, 1.5),
        (0.01, 2.5, 2.5),
        (0.01, 2.5, 5),
        (0.01, 2.5, 50),
        (0.01, 0.7, 1.5),
        (0.01, 0.7, 3.5),
        (0.05, 0.9, 2.3),
        (0.2, 1.5, 7.7),
        (0.001, 1.0, 13),
    ]:
        print(f"q={q} z={z} alpha={alpha}: rdp={mpmath.nstr(rdp(q, z, alpha), 17)}")

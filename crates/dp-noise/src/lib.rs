//! Calibrated DP noise: Gaussian (classic, analytic, distributed), Laplace, exact integer samplers, objective perturbation, accountant

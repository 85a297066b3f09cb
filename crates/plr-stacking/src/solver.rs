//! Damped Newton solver for the (perturbed, regularised) logistic-regression objective
//!
//!   f(w) = (1/n) Σ_i log(1 + e^{−y_i wᵀx_i}) + bᵀw/n + (Δ/2)‖w‖² + (λ/2)‖w − u‖²,
//!
//! the objective of stacking-paper eq. 2 with g(w) = ½‖w − u‖² (u = 0 except for transfer).
//! f is (Δ + λ)-strongly convex with Hessian (1/n) Xᵀ D X + (Δ + λ) I, D = diag(σ(z)(1 − σ(z))),
//! so the Newton system is solved by Cholesky. Newton steps with Armijo backtracking converge
//! globally on a strongly convex function with Lipschitz Hessian, quadratically near the optimum;
//! the solver stops at ‖∇f‖ ≤ 1e-8 and reports an error instead of an inexact minimiser.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::solvers::Solve;
use faer::{Accum, Col, Mat, Par, Side};
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Stop when the gradient norm is at most this.
pub const GRADIENT_TOLERANCE: f64 = 1e-8;
const MAX_ITERATIONS: usize = 200;
const ARMIJO: f64 = 1e-4;
const MAX_HALVINGS: usize = 60;
/// Bytes of the weighted row block of the Hessian accumulation (fits in L2 with room to spare).
const HESSIAN_BLOCK_BYTES: usize = 256 << 10;
/// Rows per part summed on one rayon task, in blocks (fixed, so results do not depend on the
/// thread count).
const BLOCKS_PER_PART: usize = 8;
/// Relative size below which a predicted decrease of f is lost in rounding.
const FLAT: f64 = 1e-12;

/// log(1 + e^t) without overflow or loss of precision.
pub(crate) fn softplus(t: f64) -> f64 {
    t.max(0.0) + (-t.abs()).exp().ln_1p()
}

/// σ(t) = 1/(1 + e^{−t}) without overflow.
pub(crate) fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// One objective: rows x_i (already scaled to their norm bound), labels ±1, linear noise `b`,
/// extra ridge Δ, regularisation λ and anchor u.
pub(crate) struct Objective<'a> {
    /// Xᵀ (d × n): column i is row x_i, so a block of rows is one contiguous stretch of memory.
    pub xt: &'a Mat<f64>,
    pub y: &'a [f64],
    pub b: &'a [f64],
    pub extra_ridge: f64,
    pub lambda: f64,
    pub anchor: &'a [f64],
}

impl Objective<'_> {
    fn n(&self) -> f64 {
        self.y.len() as f64
    }

    fn margins(&self, w: &Col<f64>) -> Col<f64> {
        self.xt.transpose() * w
    }

    /// The penalty part of f: bᵀw/n + (Δ/2)‖w‖² + (λ/2)‖w − u‖².
    fn penalty(&self, w: &Col<f64>) -> f64 {
        let mut penalty = 0.0;
        for j in 0..w.nrows() {
            let wj = w[j];
            let dj = wj - self.anchor[j];
            penalty += self.b[j] * wj / self.n()
                + 0.5 * self.extra_ridge * wj * wj
                + 0.5 * self.lambda * dj * dj;
        }
        penalty
    }

    /// f(w) from the margins z = Xw.
    fn value(&self, w: &Col<f64>, z: &Col<f64>) -> f64 {
        let loss: f64 = (0..self.y.len())
            .map(|i| softplus(-self.y[i] * z[i]))
            .sum::<f64>()
            / self.n();
        loss + self.penalty(w)
    }

    /// Everything at w = w_prev + step in one read of X: the margins z = z_prev + X·step, f(w),
    /// ∇f(w) and the lower triangle of ∇²f(w) (with `step = None`, z = z_prev).
    ///
    /// One exponential per row: with e = exp(−|z_i|), σ(±z_i) is 1/(1 + e) or e/(1 + e), the
    /// curvature σ(z)(1 − σ(z)) = e/(1 + e)² and softplus(−y_i z_i) = max(−y_i z_i, 0) +
    /// ln(1 + e). Rows are visited a block at a time; while a block is in cache each row gives
    /// its margin, its loss, its gradient term, and, scaled by sqrt(D/n) into a small reused
    /// buffer, its share of (1/n) XᵀDX by a symmetric rank-k update (lower triangle only, all
    /// that Cholesky reads). No weighted n × d copy is made. The rows are cut into fixed parts
    /// summed on the rayon pool and then added in order, so the result does not depend on the
    /// number of threads or their timing.
    fn pass(&self, w: &Col<f64>, z_prev: &Col<f64>, step: Option<&Col<f64>>) -> Pass {
        let n = self.n();
        let (d, rows) = (self.xt.nrows(), self.xt.ncols());
        let block_rows = (HESSIAN_BLOCK_BYTES / (8 * d.max(1))).max(16);
        let part_rows = block_rows * BLOCKS_PER_PART;
        let mut z = vec![0.0; rows];
        let mut z_step = vec![0.0; if step.is_some() { rows } else { 0 }];
        let partials: Vec<Partial> = {
            // An empty z_step (no step) has no chunks, so every part gets None.
            let mut z_step_parts = z_step.chunks_mut(part_rows);
            let jobs: Vec<PartJob<'_>> = z
                .chunks_mut(part_rows)
                .enumerate()
                .map(|(p, z_part)| (p * part_rows, z_part, z_step_parts.next()))
                .collect();
            // One weighted-block buffer per rayon task, reused across its parts (a fresh large
            // allocation per part would be fresh pages, faulted in on every pass).
            jobs.into_par_iter()
                .map_init(
                    || Mat::<f64>::zeros(d, block_rows.min(rows)),
                    |weighted, (start, z_out, z_step_out)| {
                        let rows = start..start + z_out.len();
                        self.part(rows, z_prev, step, z_out, z_step_out, weighted, block_rows)
                    },
                )
                .collect()
        };
        let mut gradient = vec![0.0; d];
        let mut hessian = Mat::<f64>::zeros(d, d);
        let mut loss = 0.0;
        for partial in partials {
            loss += partial.loss;
            for (g, p) in gradient.iter_mut().zip(&partial.gradient) {
                *g += p;
            }
            hessian += &partial.hessian;
        }
        let ridge = self.extra_ridge + self.lambda;
        let gradient = Col::from_fn(d, |j| {
            gradient[j]
                + self.b[j] / n
                + self.extra_ridge * w[j]
                + self.lambda * (w[j] - self.anchor[j])
        });
        for j in 0..d {
            hessian[(j, j)] += ridge;
        }
        Pass {
            value: loss / n + self.penalty(w),
            z: Col::from_fn(rows, |i| z[i]),
            z_step: Col::from_fn(z_step.len(), |i| z_step[i]),
            gradient,
            hessian,
        }
    }

    /// One part of [`Objective::pass`]: `rows`, in blocks of `block_rows`.
    #[allow(clippy::too_many_arguments)]
    fn part(
        &self,
        rows: std::ops::Range<usize>,
        z_prev: &Col<f64>,
        step: Option<&Col<f64>>,
        z_out: &mut [f64],
        mut z_step_out: Option<&mut [f64]>,
        weighted: &mut Mat<f64>,
        block_rows: usize,
    ) -> Partial {
        let n = self.n();
        let d = self.xt.nrows();
        let step = step.map(|s| (0..d).map(|j| s[j]).collect::<Vec<f64>>());
        let mut gradient = vec![0.0; d];
        let mut hessian = Mat::<f64>::zeros(d, d);
        let mut loss = 0.0;
        let mut done = 0;
        while done < rows.len() {
            let len = block_rows.min(rows.len() - done);
            for k in 0..len {
                let (local, i) = (done + k, rows.start + done + k);
                let row = contiguous(self.xt.col(i));
                let mut zi = z_prev[i];
                if let Some(step) = &step {
                    let moved = dot(row, step);
                    if let Some(out) = z_step_out.as_deref_mut() {
                        out[local] = moved;
                    }
                    zi += moved;
                }
                z_out[local] = zi;
                // dℓ/dz_i = −y_i σ(−y_i z_i); d²ℓ/dz_i² = σ(z_i)(1 − σ(z_i)).
                let e = (-zi.abs()).exp();
                let inv = 1.0 / (1.0 + e);
                let t = -self.y[i] * zi;
                loss += t.max(0.0) + e.ln_1p();
                let sigma_t = if t >= 0.0 { inv } else { e * inv };
                let slope = -self.y[i] * sigma_t / n;
                let root_curvature = (e / n).sqrt() * inv;
                let out = contiguous_mut(weighted.col_mut(k));
                for ((o, g), &v) in out.iter_mut().zip(&mut gradient).zip(row) {
                    *o = root_curvature * v;
                    *g += slope * v;
                }
            }
            let block = weighted.as_ref().subcols(0, len);
            triangular::matmul(
                hessian.as_mut(),
                BlockStructure::TriangularLower,
                Accum::Add,
                block,
                BlockStructure::Rectangular,
                block.transpose(),
                BlockStructure::Rectangular,
                1.0,
                Par::Seq,
            );
            done += len;
        }
        Partial {
            loss,
            gradient,
            hessian,
        }
    }

    /// Minimises f from w = u (the anchor) to ‖∇f‖ ≤ `GRADIENT_TOLERANCE`.
    ///
    /// Each Newton step s is tried in full first, and that trial is one [`Objective::pass`] that
    /// also yields the gradient and Hessian at w + s: when Armijo accepts the full step (the
    /// usual case), the step has cost a single read of X. Otherwise the line search halves t
    /// on the margins z + t·(Xs), already known, and one more pass evaluates the accepted point.
    pub fn minimise(&self) -> Result<Vec<f64>> {
        let d = self.xt.nrows();
        let mut w = Col::from_fn(d, |j| self.anchor[j]);
        let mut current = self.pass(&w, &self.margins(&w), None);
        let mut gradient_norm = f64::INFINITY;
        for iteration in 0..MAX_ITERATIONS {
            gradient_norm = current.gradient.norm_l2();
            if gradient_norm <= GRADIENT_TOLERANCE {
                return Ok((0..d).map(|j| w[j]).collect());
            }
            let step = match current.hessian.llt(Side::Lower) {
                Ok(llt) => -llt.solve(&current.gradient),
                // The Hessian is ⪰ (Δ+λ)I; a failed factorisation means overflow in the data.
                Err(_) => {
                    return Err(Error::NotConverged {
                        iterations: iteration,
                        gradient_norm,
                    });
                }
            };
            // −slope = gᵀH⁻¹g, the squared Newton decrement: twice the decrease a full step
            // predicts.
            let slope = step.transpose() * &current.gradient;
            let full = &w + &step;
            let trial = self.pass(&full, &current.z, Some(&step));
            if -slope <= FLAT * (1.0 + current.value.abs()) {
                // f cannot resolve the predicted decrease (rounding would let Armijo accept
                // arbitrary tiny steps); this close, pure Newton converges quadratically, so
                // take the full step as long as it shrinks the gradient.
                if trial.gradient.norm_l2() >= gradient_norm {
                    return Err(Error::NotConverged {
                        iterations: iteration,
                        gradient_norm,
                    });
                }
                w = full;
                current = trial;
                continue;
            }
            if trial.value <= current.value + ARMIJO * slope {
                w = full;
                current = trial;
                continue;
            }
            let mut t = 0.5;
            let mut accepted = false;
            for _ in 1..MAX_HALVINGS {
                let candidate = &w + &step * t;
                let candidate_z = &current.z + &trial.z_step * t;
                if self.value(&candidate, &candidate_z) <= current.value + ARMIJO * t * slope {
                    current = self.pass(&candidate, &candidate_z, None);
                    w = candidate;
                    accepted = true;
                    break;
                }
                t *= 0.5;
            }
            if !accepted {
                return Err(Error::NotConverged {
                    iterations: iteration,
                    gradient_norm,
                });
            }
        }
        Err(Error::NotConverged {
            iterations: MAX_ITERATIONS,
            gradient_norm,
        })
    }
}

/// What one read of X yields at a point (see [`Objective::pass`]).
struct Pass {
    value: f64,
    z: Col<f64>,
    /// X·step when the pass moved along a step (empty otherwise).
    z_step: Col<f64>,
    gradient: Col<f64>,
    /// Lower triangle of the Hessian.
    hessian: Mat<f64>,
}

/// A part of the rows: its first row, its margins and (when moving along a step) its X·step.
type PartJob<'a> = (usize, &'a mut [f64], Option<&'a mut [f64]>);

/// The sums of one part of the rows.
struct Partial {
    loss: f64,
    gradient: Vec<f64>,
    hessian: Mat<f64>,
}

/// Σ a_i b_i with four independent partial sums (one running sum would be a serial chain).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; 4];
    let (a4, a_tail) = a.as_chunks::<4>();
    let (b4, b_tail) = b.as_chunks::<4>();
    for (x, y) in a4.iter().zip(b4) {
        for k in 0..4 {
            lanes[k] += x[k] * y[k];
        }
    }
    let tail: f64 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// A column of an owned faer matrix as a slice (owned matrices store columns contiguously).
fn contiguous(column: faer::ColRef<'_, f64>) -> &[f64] {
    column
        .try_as_col_major()
        .expect("columns of a faer Mat are contiguous")
        .as_slice()
}

fn contiguous_mut(column: faer::ColMut<'_, f64>) -> &mut [f64] {
    column
        .try_as_col_major_mut()
        .expect("columns of a faer Mat are contiguous")
        .as_slice_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_link_functions() {
        assert_eq!(softplus(1000.0), 1000.0);
        assert!(softplus(-1000.0) >= 0.0 && softplus(-1000.0) < 1e-300);
        assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-16);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert!((sigmoid(0.3) + sigmoid(-0.3) - 1.0).abs() < 1e-16);
    }

    /// Plain gradient descent with step 1/L (L = max‖x‖²/4 + Δ + λ bounds the Hessian) on the
    /// same objective, written independently of the Newton code.
    fn gradient_descent(
        rows: &[Vec<f64>],
        y: &[f64],
        b: &[f64],
        extra: f64,
        lambda: f64,
        u: &[f64],
    ) -> Vec<f64> {
        let n = rows.len() as f64;
        let d = b.len();
        let max_sq = rows
            .iter()
            .map(|r| r.iter().map(|v| v * v).sum::<f64>())
            .fold(0.0, f64::max);
        let step = 1.0 / (max_sq / 4.0 + extra + lambda);
        let mut w = vec![0.0; d];
        for _ in 0..200_000 {
            let mut g: Vec<f64> = (0..d)
                .map(|j| b[j] / n + extra * w[j] + lambda * (w[j] - u[j]))
                .collect();
            for (r, &yi) in rows.iter().zip(y) {
                let z: f64 = r.iter().zip(&w).map(|(a, c)| a * c).sum();
                let coef = -yi / (1.0 + (yi * z).exp()) / n;
                for j in 0..d {
                    g[j] += coef * r[j];
                }
            }
            if g.iter().map(|v| v * v).sum::<f64>().sqrt() < 1e-12 {
                break;
            }
            for j in 0..d {
                w[j] -= step * g[j];
            }
        }
        w
    }

    #[test]
    fn newton_matches_gradient_descent_with_noise_ridge_and_anchor() {
        // Small deterministic problem: rows on a curve, labels from a rule with some flips.
        let rows: Vec<Vec<f64>> = (0..40)
            .map(|i| {
                let t = i as f64 / 40.0;
                vec![(6.0 * t).sin() * 0.6, (3.0 * t).cos() * 0.5, t - 0.5]
            })
            .collect();
        let y: Vec<f64> = (0..40)
            .map(|i| if (i * 7) % 5 < 2 { 1.0 } else { -1.0 })
            .collect();
        let b = [0.8, -1.3, 0.4];
        let u = [0.2, 0.0, -0.1];
        let (extra, lambda) = (0.05, 0.1);
        let x = Mat::from_fn(40, 3, |i, j| rows[i][j]);
        let newton = Objective {
            xt: &x.transpose().to_owned(),
            y: &y,
            b: &b,
            extra_ridge: extra,
            lambda,
            anchor: &u,
        }
        .minimise()
        .unwrap();
        let reference = gradient_descent(&rows, &y, &b, extra, lambda, &u);
        for (a, r) in newton.iter().zip(&reference) {
            assert!((a - r).abs() < 1e-9, "{newton:?} vs {reference:?}");
        }
    }

    #[test]
    fn blocked_hessian_and_gradient_match_direct_sums() {
        // Two full parts, one more block and a partial block: every boundary is crossed.
        let d = 50;
        let block_rows = HESSIAN_BLOCK_BYTES / (8 * d);
        let rows = 2 * block_rows * BLOCKS_PER_PART + block_rows + 7;
        let x = Mat::from_fn(rows, d, |i, j| {
            (((i * 31 + j * 17) % 97) as f64 - 48.0) / 60.0
        });
        let y: Vec<f64> = (0..rows)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let b: Vec<f64> = (0..d).map(|j| j as f64 / 10.0 - 2.0).collect();
        let u: Vec<f64> = (0..d).map(|j| (j % 4) as f64 * 0.1).collect();
        let (extra, lambda) = (0.03, 0.2);
        let objective = Objective {
            xt: &x.transpose().to_owned(),
            y: &y,
            b: &b,
            extra_ridge: extra,
            lambda,
            anchor: &u,
        };
        let w = Col::from_fn(d, |j| ((j * 7) % 5) as f64 * 0.3 - 0.6);
        let z = objective.margins(&w);
        let at_w = objective.pass(&w, &z, None);
        assert!((at_w.value - objective.value(&w, &z)).abs() < 1e-12 * at_w.value.abs().max(1.0));
        // Arriving at w by a step from elsewhere gives the same point, up to rounding.
        let from = Col::from_fn(d, |j| (j % 3) as f64 * 0.1);
        let moved = objective.pass(&w, &objective.margins(&from), Some(&(&w - &from)));
        for i in 0..rows {
            assert!((moved.z[i] - z[i]).abs() < 1e-12, "margin {i}");
        }
        assert!((moved.value - at_w.value).abs() < 1e-12);
        for j in 0..d {
            assert!(
                (moved.gradient[j] - at_w.gradient[j]).abs() < 1e-12,
                "gradient {j}"
            );
        }
        let (gradient, hessian) = (at_w.gradient, at_w.hessian);
        let n = rows as f64;
        for j in 0..d {
            let mut g = b[j] / n + extra * w[j] + lambda * (w[j] - u[j]);
            for i in 0..rows {
                let zi: f64 = (0..d).map(|k| x[(i, k)] * w[k]).sum();
                g += -y[i] / (1.0 + (y[i] * zi).exp()) * x[(i, j)] / n;
            }
            assert!((gradient[j] - g).abs() < 1e-12, "gradient {j}");
            for k in 0..=j {
                let mut h = if j == k { extra + lambda } else { 0.0 };
                for i in 0..rows {
                    let s = 1.0 / (1.0 + (-z[i]).exp());
                    h += s * (1.0 - s) * x[(i, j)] * x[(i, k)] / n;
                }
                assert!((hessian[(j, k)] - h).abs() < 1e-12, "hessian ({j},{k})");
            }
        }
    }

    #[test]
    fn separable_data_with_weak_ridge_converges() {
        // Perfectly separable: the minimiser is large, bounded only by λ = 1e-6.
        let x = Mat::from_fn(
            20,
            2,
            |i, j| if j == 0 { (i as f64 - 9.5) / 10.0 } else { 0.1 },
        );
        let y: Vec<f64> = (0..20).map(|i| if i >= 10 { 1.0 } else { -1.0 }).collect();
        let w = Objective {
            xt: &x.transpose().to_owned(),
            y: &y,
            b: &[0.0, 0.0],
            extra_ridge: 0.0,
            lambda: 1e-6,
            anchor: &[0.0, 0.0],
        }
        .minimise()
        .unwrap();
        assert!(w[0] > 10.0, "{w:?}");
    }
}

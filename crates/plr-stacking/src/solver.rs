//! Newton / BFGS solver for the (perturbed, regularised) logistic-regression objective
//!
//!   f(w) = (1/n) Σ_i log(1 + e^{−y_i wᵀx_i}) + bᵀw/n + (Δ/2)‖w‖² + (λ/2)‖w − u‖²,
//!
//! the objective of stacking-paper eq. 2 with g(w) = ½‖w − u‖² (u = 0 except for transfer).
//! f is (Δ + λ)-strongly convex with Hessian (1/n) Xᵀ D X + (Δ + λ) I, D = diag(σ(z)(1 − σ(z))),
//! so the Newton system is solved by Cholesky. The solver starts from the exact Hessian and then
//! corrects its inverse by BFGS updates from exact gradients, going back to the exact Hessian
//! whenever a step fails to shrink ‖∇f‖ (Armijo backtracking only ever on exact Newton steps);
//! it stops at ‖∇f‖ ≤ 1e-8 and reports an error instead of an inexact minimiser.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::solvers::DenseSolveCore;
use faer::{Accum, Col, Mat, MatRef, Par, Side};
use multiversion::multiversion;
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
/// An inverse-Hessian approximation is updated and kept for the next step while the full step
/// it gave was accepted and shrank ‖∇f‖ at least by this factor (1: did not let it grow);
/// otherwise the next step starts from the exact Hessian. On the benchmark of
/// docs/src/results/peers.md (n = 5·10⁴, d = 100) 1 needs a single Hessian per fit and ≈ 14 BFGS steps.
const CHORD_CONTRACTION: f64 = 1.0;
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

/// One objective: rows s_i·x_i (x_i a row of X, s_i its factor to the norm bound), labels ±1,
/// linear noise `b`, extra ridge Δ, regularisation λ and anchor u.
pub(crate) struct Objective<'a> {
    /// X (n × d) with contiguous columns (a column-major matrix or a view of one), read in
    /// place: no scaled or transposed copy is made.
    pub x: MatRef<'a, f64>,
    /// s_i per row (1 for rows inside the ball).
    pub row_scale: &'a [f64],
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

    /// z_i = s_i x_iᵀw.
    fn margins(&self, w: &Col<f64>) -> Vec<f64> {
        if (0..w.nrows()).all(|j| w[j] == 0.0) {
            // The usual start (anchor u = 0): no read of X needed (X is finite).
            return vec![0.0; self.x.nrows()];
        }
        let z = self.x * w;
        (0..z.nrows()).map(|i| z[i] * self.row_scale[i]).collect()
    }

    /// Rows per block: a block of X (rows × d) fits in L2 with room to spare.
    fn block_rows(&self) -> usize {
        (HESSIAN_BLOCK_BYTES / (8 * self.x.ncols().max(1))).max(16)
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
    fn value(&self, w: &Col<f64>, z: &[f64]) -> f64 {
        let loss: f64 = (0..self.y.len())
            .map(|i| softplus(-self.y[i] * z[i]))
            .sum::<f64>()
            / self.n();
        loss + self.penalty(w)
    }

    /// Everything but the Hessian at w = w_prev + step in one read of X: the margins
    /// z = z_prev + X·step, f(w), ∇f(w) and each row's Hessian weight sqrt(σ(z_i)(1 − σ(z_i))/n)
    /// (with `step = None`, z = z_prev).
    ///
    /// One exponential per row: with e = exp(−|z_i|), σ(±z_i) is 1/(1 + e) or e/(1 + e), the
    /// curvature σ(z)(1 − σ(z)) = e/(1 + e)² and softplus(−y_i z_i) = max(−y_i z_i, 0) +
    /// ln(1 + e), the logarithms taken of products of 64 factors (see [`row_terms`]). Rows are
    /// visited a block at a time; while a block is in cache its margins are one matrix–vector
    /// product ([`block_times_vector`], the one read of this block from memory), its per-row
    /// terms one loop, and its share of the gradient a second matrix–vector product from cache
    /// ([`add_block_transpose_times_vector`]). The rows are cut into fixed parts summed on the rayon pool
    /// and then added in order, so the result does not depend on the number of threads or
    /// their timing. The Hessian is left to [`Objective::hessian`], which only the steps that
    /// need a new one pay for.
    fn evaluate(&self, w: &Col<f64>, z_prev: &[f64], step: Option<&Col<f64>>) -> Point {
        let n = self.n();
        let (rows, d) = (self.x.nrows(), self.x.ncols());
        let block_rows = self.block_rows();
        let part_rows = block_rows * BLOCKS_PER_PART;
        let mut z = vec![0.0; rows];
        let mut z_step = vec![0.0; if step.is_some() { rows } else { 0 }];
        let mut root_curvature = vec![0.0; rows];
        let step = step.map(|s| (0..d).map(|j| s[j]).collect::<Vec<f64>>());
        let partials: Vec<Partial> = {
            // An empty z_step (no step) has no chunks, so every part gets None.
            let mut z_step_parts = z_step.chunks_mut(part_rows);
            let jobs: Vec<PartJob<'_>> = z
                .chunks_mut(part_rows)
                .zip(root_curvature.chunks_mut(part_rows))
                .enumerate()
                .map(|(p, (z_part, root_part))| {
                    (p * part_rows, z_part, root_part, z_step_parts.next())
                })
                .collect();
            jobs.into_par_iter()
                .map_init(
                    || vec![0.0; block_rows.min(rows)],
                    |slopes, (start, z_out, root_out, z_step_out)| {
                        self.evaluate_part(
                            start,
                            z_prev,
                            step.as_deref(),
                            z_out,
                            root_out,
                            z_step_out,
                            slopes,
                            block_rows,
                        )
                    },
                )
                .collect()
        };
        let mut gradient = vec![0.0; d];
        let mut loss = 0.0;
        for partial in partials {
            loss += partial.loss;
            for (g, p) in gradient.iter_mut().zip(&partial.gradient) {
                *g += p;
            }
        }
        let gradient = Col::from_fn(d, |j| {
            gradient[j]
                + self.b[j] / n
                + self.extra_ridge * w[j]
                + self.lambda * (w[j] - self.anchor[j])
        });
        Point {
            value: loss / n + self.penalty(w),
            z,
            z_step,
            gradient,
            root_curvature,
        }
    }

    /// One part of [`Objective::evaluate`]: the rows from `start` on, as many as `z_out` holds,
    /// in blocks of `block_rows`.
    #[allow(clippy::too_many_arguments)]
    fn evaluate_part(
        &self,
        start: usize,
        z_prev: &[f64],
        step: Option<&[f64]>,
        z_out: &mut [f64],
        root_out: &mut [f64],
        mut z_step_out: Option<&mut [f64]>,
        slopes: &mut [f64],
        block_rows: usize,
    ) -> Partial {
        let n = self.n();
        let d = self.x.ncols();
        let mut gradient = vec![0.0; d];
        let mut loss = 0.0;
        let mut done = 0;
        while done < z_out.len() {
            let len = block_rows.min(z_out.len() - done);
            let first = start + done;
            let block = self.x.subrows(first, len);
            let scale = &self.row_scale[first..first + len];
            let local = done..done + len;
            let z_block = &mut z_out[local.clone()];
            match (step, z_step_out.as_deref_mut()) {
                (Some(step), Some(z_step_all)) => {
                    let moved = &mut z_step_all[local.clone()];
                    block_times_vector(block, step, moved);
                    for (((z, m), &p), &s) in z_block
                        .iter_mut()
                        .zip(moved.iter_mut())
                        .zip(&z_prev[first..])
                        .zip(scale)
                    {
                        *m *= s;
                        *z = p + *m;
                    }
                }
                _ => z_block.copy_from_slice(&z_prev[first..first + len]),
            }
            let slopes = &mut slopes[..len];
            let roots = &mut root_out[local];
            let labels = &self.y[first..first + len];
            // e_i = exp(−|z_i|) first (a libm call per row), parked in `roots`; then every other
            // per-row term in one branch-free loop that vectorises.
            for (root, &zi) in roots.iter_mut().zip(&*z_block) {
                *root = (-zi.abs()).exp();
            }
            loss += row_terms(z_block, labels, scale, n, roots, slopes);
            add_block_transpose_times_vector(block, slopes, &mut gradient);
            done += len;
        }
        Partial { loss, gradient }
    }

    /// The lower triangle of ∇²f = (1/n) XᵀDX + (Δ + λ)I, from the row weights sqrt(D/n) of an
    /// [`Objective::evaluate`]: a block of rows at a time is scaled into a small reused buffer
    /// and added by a symmetric rank-k update (lower triangle only, all that Cholesky reads).
    /// No weighted n × d copy is made; parts are fixed and added in order as in `evaluate`.
    fn hessian(&self, root_curvature: &[f64]) -> Mat<f64> {
        let (rows, d) = (self.x.nrows(), self.x.ncols());
        let block_rows = self.block_rows();
        let part_rows = block_rows * BLOCKS_PER_PART;
        let starts: Vec<usize> = (0..rows).step_by(part_rows.max(1)).collect();
        // One weighted-block buffer per rayon task, reused across its parts (a fresh large
        // allocation per part would be fresh pages, faulted in on every pass).
        let partials: Vec<Mat<f64>> = starts
            .into_par_iter()
            .map_init(
                || Mat::<f64>::zeros(block_rows.min(rows), d),
                |weighted, start| {
                    let end = (start + part_rows).min(rows);
                    let mut hessian = Mat::<f64>::zeros(d, d);
                    let mut first = start;
                    while first < end {
                        let len = block_rows.min(end - first);
                        let roots = &root_curvature[first..first + len];
                        for j in 0..d {
                            let column = &contiguous(self.x.col(j))[first..first + len];
                            let out = &mut contiguous_mut(weighted.col_mut(j))[..len];
                            for ((o, &v), &r) in out.iter_mut().zip(column).zip(roots) {
                                *o = r * v;
                            }
                        }
                        let block = weighted.as_ref().subrows(0, len);
                        triangular::matmul(
                            hessian.as_mut(),
                            BlockStructure::TriangularLower,
                            Accum::Add,
                            block.transpose(),
                            BlockStructure::Rectangular,
                            block,
                            BlockStructure::Rectangular,
                            1.0,
                            Par::Seq,
                        );
                        first += len;
                    }
                    hessian
                },
            )
            .collect();
        let mut hessian = Mat::<f64>::zeros(d, d);
        for partial in &partials {
            hessian += partial;
        }
        let ridge = self.extra_ridge + self.lambda;
        for j in 0..d {
            hessian[(j, j)] += ridge;
        }
        hessian
    }

    /// Minimises f from w = u (the anchor) to ‖∇f‖ ≤ `GRADIENT_TOLERANCE`.
    ///
    /// Each step s = −H⁻¹∇f(w) is tried in full first, and that trial is one
    /// [`Objective::evaluate`], which also yields the gradient at w + s: when Armijo accepts
    /// the full step (the usual case), the step has cost a single read of X. Otherwise the line
    /// search halves t on the margins z + t·(Xs), already known, and one more read evaluates
    /// the accepted point.
    ///
    /// H⁻¹ is the inverse of the exact Hessian at w (formed by [`Objective::hessian`], which
    /// costs several reads' worth of arithmetic) or the BFGS update (rank two, d² work) of the
    /// previous step's H⁻¹ by that step and its change in the exact gradient. The gradient is
    /// always exact, so the fixed point and the stopping rule are those of Newton's method. An
    /// approximation is kept while its full steps are accepted and shrink ‖∇f‖ (see
    /// `CHORD_CONTRACTION`); one whose full step is rejected, or that gives no descent
    /// direction, is dropped and the step retried from the exact Hessian at w, so backtracking
    /// only ever runs on exact Newton steps.
    pub fn minimise(&self) -> Result<Vec<f64>> {
        let d = self.x.ncols();
        let mut w = Col::from_fn(d, |j| self.anchor[j]);
        let z0 = self.margins(&w);
        let mut current = self.evaluate(&w, &z0, None);
        // The approximate inverse Hessian in use and whether it is the exact one at w.
        let mut inverse: Option<Mat<f64>> = None;
        let mut fresh;
        let mut gradient_norm = f64::INFINITY;
        for iteration in 0..MAX_ITERATIONS {
            gradient_norm = current.gradient.norm_l2();
            if gradient_norm <= GRADIENT_TOLERANCE {
                return Ok((0..d).map(|j| w[j]).collect());
            }
            let h_inv = match inverse.take() {
                Some(h_inv) => {
                    fresh = false;
                    h_inv
                }
                None => {
                    fresh = true;
                    match self.hessian(&current.root_curvature).llt(Side::Lower) {
                        Ok(llt) => llt.inverse(),
                        // The Hessian is ⪰ (Δ+λ)I; a failed factorisation means overflow in
                        // the data.
                        Err(_) => {
                            return Err(Error::NotConverged {
                                iterations: iteration,
                                gradient_norm,
                            });
                        }
                    }
                }
            };
            let step = -(&h_inv * &current.gradient);
            // −slope = gᵀH⁻¹g (the squared Newton decrement for a fresh H): twice the decrease
            // a full step predicts.
            let slope = step.transpose() * &current.gradient;
            if !fresh && (slope >= 0.0 || slope.is_nan()) {
                // Not a descent direction (rounding in a stale approximation): start afresh.
                continue;
            }
            let full = &w + &step;
            let trial = self.evaluate(&full, &current.z, Some(&step));
            let trial_norm = trial.gradient.norm_l2();
            let flat = -slope <= FLAT * (1.0 + current.value.abs());
            // When f cannot resolve the predicted decrease (rounding would let Armijo accept
            // arbitrary tiny steps), the iteration is this close and converges fast, so the
            // full step is taken as long as it shrinks the gradient.
            let accept_full = if flat {
                trial_norm < gradient_norm
            } else {
                trial.value <= current.value + ARMIJO * slope
            };
            if accept_full {
                if trial_norm <= CHORD_CONTRACTION * gradient_norm {
                    let change = &trial.gradient - &current.gradient;
                    inverse = Some(bfgs_update(h_inv, &step, &change));
                }
                w = full;
                current = trial;
                continue;
            }
            if !fresh {
                // A stale factor's step failed: retry from w with the Hessian at w.
                continue;
            }
            if flat {
                return Err(Error::NotConverged {
                    iterations: iteration,
                    gradient_norm,
                });
            }
            let mut t = 0.5;
            let mut accepted = false;
            let mut candidate_z = vec![0.0; current.z.len()];
            for _ in 1..MAX_HALVINGS {
                let candidate = &w + &step * t;
                for ((c, &z), &m) in candidate_z.iter_mut().zip(&current.z).zip(&trial.z_step) {
                    *c = z + m * t;
                }
                if self.value(&candidate, &candidate_z) <= current.value + ARMIJO * t * slope {
                    current = self.evaluate(&candidate, &candidate_z, None);
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

/// The BFGS update of an inverse-Hessian approximation H after a step s that changed the
/// gradient by y: H⁺ = (I − ρsyᵀ) H (I − ρysᵀ) + ρssᵀ, ρ = 1/(yᵀs), so that H⁺y = s. f is
/// strongly convex, so yᵀs > 0 and H⁺ stays positive definite; should rounding say otherwise,
/// H is returned unchanged.
fn bfgs_update(mut h: Mat<f64>, s: &Col<f64>, y: &Col<f64>) -> Mat<f64> {
    let ys = y.transpose() * s;
    if ys <= 0.0 || !ys.is_finite() {
        return h;
    }
    let rho = 1.0 / ys;
    let hy = &h * y;
    let yhy = y.transpose() * &hy;
    let ss = rho * rho * yhy + rho;
    let d = h.nrows();
    for k in 0..d {
        for j in 0..d {
            h[(j, k)] += ss * s[j] * s[k] - rho * (s[j] * hy[k] + hy[j] * s[k]);
        }
    }
    h
}

/// What one read of X yields at a point (see [`Objective::evaluate`]).
struct Point {
    value: f64,
    z: Vec<f64>,
    /// X·step when the evaluation moved along a step (empty otherwise).
    z_step: Vec<f64>,
    gradient: Col<f64>,
    /// sqrt(σ(z_i)(1 − σ(z_i))/n) per row: the Hessian's row weights.
    root_curvature: Vec<f64>,
}

/// A part of the rows: its first row, its margins, its Hessian row weights and (when moving
/// along a step) its X·step.
type PartJob<'a> = (usize, &'a mut [f64], &'a mut [f64], Option<&'a mut [f64]>);

/// The sums of one part of the rows.
struct Partial {
    loss: f64,
    gradient: Vec<f64>,
}

/// The per-row terms of a block from its margins z, labels y, row factors s and, in `roots` on
/// entry, e_i = exp(−|z_i|): with σ(±z_i) = 1/(1 + e) or e/(1 + e) and t_i = −y_i z_i,
/// slope_i = −y_i σ(t_i) s_i / n (dℓ/dz_i times the row factor) and root_i =
/// sqrt(e/n)/(1 + e) · s_i (the Hessian row weight, replacing e). Returns the block's loss
/// Σ softplus(t_i) = Σ max(t_i, 0) + ln Π (1 + e_i): the products run in eight fixed lanes of
/// at most 64 factors in [1, 2] (no overflow), so one `ln` serves 64 rows instead of one
/// `ln_1p` per row. Compiled for AVX-512F, AVX2 and the baseline, dispatched at run time.
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn row_terms(
    z: &[f64],
    y: &[f64],
    scale: &[f64],
    n: f64,
    roots: &mut [f64],
    slopes: &mut [f64],
) -> f64 {
    const LANES: usize = 8;
    const CHUNK: usize = 64 * LANES;
    #[inline(always)]
    fn one(z: f64, y: f64, s: f64, n: f64, root: &mut f64, slope: &mut f64) -> (f64, f64) {
        let e = *root;
        let inv = 1.0 / (1.0 + e);
        let t = -y * z;
        let sigma_t = if t >= 0.0 { inv } else { e * inv };
        *slope = -y * sigma_t / n * s;
        *root = (e / n).sqrt() * inv * s;
        (t.max(0.0), 1.0 + e)
    }
    let mut loss = 0.0;
    let chunks = z
        .chunks(CHUNK)
        .zip(y.chunks(CHUNK))
        .zip(scale.chunks(CHUNK))
        .zip(roots.chunks_mut(CHUNK).zip(slopes.chunks_mut(CHUNK)));
    for (((z, y), scale), (roots, slopes)) in chunks {
        let mut hinge = [0.0; LANES];
        let mut product = [1.0; LANES];
        let (z8, z_tail) = z.as_chunks::<LANES>();
        let (y8, y_tail) = y.as_chunks::<LANES>();
        let (s8, s_tail) = scale.as_chunks::<LANES>();
        let (r8, r_tail) = roots.as_chunks_mut::<LANES>();
        let (g8, g_tail) = slopes.as_chunks_mut::<LANES>();
        for ((((z, y), s), r), g) in z8.iter().zip(y8).zip(s8).zip(r8).zip(g8) {
            for l in 0..LANES {
                let (h, p) = one(z[l], y[l], s[l], n, &mut r[l], &mut g[l]);
                hinge[l] += h;
                product[l] *= p;
            }
        }
        let tail = z_tail
            .iter()
            .zip(y_tail)
            .zip(s_tail)
            .zip(r_tail)
            .zip(g_tail);
        for (l, ((((&z, &y), &s), r), g)) in tail.enumerate() {
            let (h, p) = one(z, y, s, n, r, g);
            hinge[l] += h;
            product[l] *= p;
        }
        for l in 0..LANES {
            loss += hinge[l] + product[l].ln();
        }
    }
    loss
}

/// out = B·v for a block B of rows of X (columns contiguous), four columns per sweep over out
/// (which stays in L1); compiled for AVX-512F, AVX2 and the baseline, dispatched at run time.
/// The order of the additions is fixed, so the result does not depend on the machine's threads.
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn block_times_vector<'a>(block: MatRef<'a, f64>, v: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    let d = block.ncols();
    let mut j = 0;
    while j + 4 <= d {
        let (c0, c1) = (contiguous(block.col(j)), contiguous(block.col(j + 1)));
        let (c2, c3) = (contiguous(block.col(j + 2)), contiguous(block.col(j + 3)));
        let (v0, v1, v2, v3) = (v[j], v[j + 1], v[j + 2], v[j + 3]);
        for ((((o, &a), &b), &c), &e) in out.iter_mut().zip(c0).zip(c1).zip(c2).zip(c3) {
            *o += (a * v0 + b * v1) + (c * v2 + e * v3);
        }
        j += 4;
    }
    for (j, &vj) in v.iter().enumerate().skip(j) {
        for (o, &a) in out.iter_mut().zip(contiguous(block.col(j))) {
            *o += a * vj;
        }
    }
}

/// g += Bᵀr for a block B of rows of X (columns contiguous): one dot product per column, each
/// with eight fixed partial sums, four columns at a time (independent chains); compiled and
/// dispatched as [`block_times_vector`].
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn add_block_transpose_times_vector<'a>(block: MatRef<'a, f64>, r: &[f64], g: &mut [f64]) {
    const LANES: usize = 8;
    let d = block.ncols();
    let (r8, r_tail) = r.as_chunks::<LANES>();
    let mut j = 0;
    while j < d {
        let width = (d - j).min(4);
        let mut sums = [[0.0; LANES]; 4];
        for (c, sum) in sums.iter_mut().enumerate().take(width) {
            let column = contiguous(block.col(j + c));
            let (x8, _) = column.as_chunks::<LANES>();
            for (x, y) in x8.iter().zip(r8) {
                for k in 0..LANES {
                    sum[k] += x[k] * y[k];
                }
            }
        }
        for (c, sum) in sums.iter().enumerate().take(width) {
            let column = contiguous(block.col(j + c));
            let tail: f64 = column[r8.len() * LANES..]
                .iter()
                .zip(r_tail)
                .map(|(x, y)| x * y)
                .sum();
            let halves = [
                (sum[0] + sum[4]) + (sum[2] + sum[6]),
                (sum[1] + sum[5]) + (sum[3] + sum[7]),
            ];
            g[j + c] += (halves[0] + halves[1]) + tail;
        }
        j += width;
    }
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
            x: x.as_ref(),
            row_scale: &[1.0; 40],
            y: &y,
            b: &b,
            extra_ridge: extra,
            lambda,
            anchor: &u,
        }
        .minimise()
        .unwrap();
        let reference = gradient_descent(&rows, &y, &b, extra, lambda, &u);
        // f is (Δ + λ)-strongly convex, so ‖∇f‖ ≤ tol puts w within tol/(Δ + λ) of the
        // minimiser (the reference runs to ‖∇f‖ < 1e-12).
        let distance = newton
            .iter()
            .zip(&reference)
            .map(|(a, r)| (a - r) * (a - r))
            .sum::<f64>()
            .sqrt();
        let bound = (GRADIENT_TOLERANCE + 1e-12) / (extra + lambda);
        assert!(distance <= bound, "{newton:?} vs {reference:?}");
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
        // Row factors as the norm clip makes them (1 inside the ball, below 1 outside).
        let scale: Vec<f64> = (0..rows).map(|i| 1.0 - (i % 5) as f64 * 0.15).collect();
        let objective = Objective {
            x: x.as_ref(),
            row_scale: &scale,
            y: &y,
            b: &b,
            extra_ridge: extra,
            lambda,
            anchor: &u,
        };
        let w = Col::from_fn(d, |j| ((j * 7) % 5) as f64 * 0.3 - 0.6);
        let z = objective.margins(&w);
        let at_w = objective.evaluate(&w, &z, None);
        assert!((at_w.value - objective.value(&w, &z)).abs() < 1e-12 * at_w.value.abs().max(1.0));
        // Arriving at w by a step from elsewhere gives the same point, up to rounding.
        let from = Col::from_fn(d, |j| (j % 3) as f64 * 0.1);
        let z_from = objective.margins(&from);
        let moved = objective.evaluate(&w, &z_from, Some(&(&w - &from)));
        for (i, (m, zi)) in moved.z.iter().zip(&z).enumerate() {
            assert!((m - zi).abs() < 1e-12, "margin {i}");
        }
        assert!((moved.value - at_w.value).abs() < 1e-12);
        for j in 0..d {
            assert!(
                (moved.gradient[j] - at_w.gradient[j]).abs() < 1e-12,
                "gradient {j}"
            );
        }
        for i in 0..rows {
            assert!(
                (moved.root_curvature[i] - at_w.root_curvature[i]).abs() < 1e-12,
                "weight {i}"
            );
        }
        let hessian = objective.hessian(&at_w.root_curvature);
        let gradient = at_w.gradient;
        let n = rows as f64;
        for j in 0..d {
            let mut g = b[j] / n + extra * w[j] + lambda * (w[j] - u[j]);
            for i in 0..rows {
                let zi: f64 = (0..d).map(|k| scale[i] * x[(i, k)] * w[k]).sum();
                g += -y[i] / (1.0 + (y[i] * zi).exp()) * scale[i] * x[(i, j)] / n;
            }
            assert!((gradient[j] - g).abs() < 1e-12, "gradient {j}");
            for k in 0..=j {
                let mut h = if j == k { extra + lambda } else { 0.0 };
                for i in 0..rows {
                    let s = 1.0 / (1.0 + (-z[i]).exp());
                    h += s * (1.0 - s) * scale[i] * x[(i, j)] * scale[i] * x[(i, k)] / n;
                }
                assert!((hessian[(j, k)] - h).abs() < 1e-12, "hessian ({j},{k})");
            }
        }
    }

    #[test]
    fn block_kernels_match_plain_sums() {
        // Column counts around the four-column sweep, row counts around the eight lanes.
        for d in [1, 3, 4, 5, 9] {
            for len in [0, 1, 7, 8, 9, 33] {
                let x = Mat::from_fn(len + 5, d, |i, j| ((i * 5 + j * 3) % 11) as f64 - 4.5);
                let block = x.as_ref().subrows(2, len);
                let v: Vec<f64> = (0..d).map(|j| 0.5 - j as f64 * 0.25).collect();
                let r: Vec<f64> = (0..len).map(|i| (i % 4) as f64 - 1.25).collect();
                let mut out = vec![f64::NAN; len];
                block_times_vector(block, &v, &mut out);
                let mut g = vec![1.0; d];
                add_block_transpose_times_vector(block, &r, &mut g);
                for (i, o) in out.iter().enumerate() {
                    let plain: f64 = (0..d).map(|j| block[(i, j)] * v[j]).sum();
                    assert!((o - plain).abs() < 1e-12, "d {d} len {len} row {i}");
                }
                for (j, gj) in g.iter().enumerate() {
                    let plain: f64 = 1.0 + (0..len).map(|i| block[(i, j)] * r[i]).sum::<f64>();
                    assert!((gj - plain).abs() < 1e-12, "d {d} len {len} column {j}");
                }
            }
        }
    }

    #[test]
    fn row_terms_match_the_link_functions() {
        // Margins from tiny to huge of both signs, more rows than one product chunk (512) and
        // a tail that is not a multiple of the eight lanes.
        let len = 1100;
        let z: Vec<f64> = (0..len)
            .map(|i| {
                let magnitude = [0.0, 1e-9, 0.3, 2.0, 17.0, 40.0, 800.0, 1e6][i % 8];
                if i % 3 == 0 {
                    -magnitude
                } else {
                    magnitude * (1.0 + i as f64 * 1e-3)
                }
            })
            .collect();
        let y: Vec<f64> = (0..len)
            .map(|i| if i % 5 < 2 { 1.0 } else { -1.0 })
            .collect();
        let scale: Vec<f64> = (0..len).map(|i| 1.0 - (i % 4) as f64 * 0.2).collect();
        let n = 3000.0;
        let mut roots: Vec<f64> = z.iter().map(|zi| (-zi.abs()).exp()).collect();
        let mut slopes = vec![f64::NAN; len];
        let loss = row_terms(&z, &y, &scale, n, &mut roots, &mut slopes);
        let mut expected = 0.0;
        for i in 0..len {
            let t = -y[i] * z[i];
            expected += softplus(t);
            let slope = -y[i] * sigmoid(t) / n * scale[i];
            let curvature = sigmoid(z[i]) * sigmoid(-z[i]);
            let root = (curvature / n).sqrt() * scale[i];
            assert!(
                (slopes[i] - slope).abs() <= 1e-15 * slope.abs(),
                "slope {i}"
            );
            assert!((roots[i] - root).abs() <= 1e-14 * root.abs(), "root {i}");
        }
        assert!(
            (loss - expected).abs() <= 1e-13 * expected,
            "{loss} vs {expected}"
        );
    }

    #[test]
    fn bfgs_update_meets_the_secant_equation_and_stays_symmetric() {
        let d = 4;
        let h = Mat::from_fn(d, d, |i, j| if i == j { 2.0 + i as f64 } else { 0.1 });
        let s = Col::from_fn(d, |j| 0.3 - j as f64 * 0.05);
        let y = Col::from_fn(d, |j| 0.5 + j as f64 * 0.1);
        assert!((y.transpose() * &s) > 0.0);
        let updated = bfgs_update(h.clone(), &s, &y);
        let hy = &updated * &y;
        for j in 0..d {
            assert!((hy[j] - s[j]).abs() < 1e-12, "secant {j}");
            for k in 0..d {
                assert!((updated[(j, k)] - updated[(k, j)]).abs() < 1e-12);
            }
        }
        assert!(updated.llt(Side::Lower).is_ok(), "stays positive definite");
        // Negative curvature along s (impossible for f, possible by rounding): unchanged.
        assert_eq!(bfgs_update(h.clone(), &s, &(-&y)), h);
    }

    #[test]
    fn minimiser_does_not_depend_on_the_thread_count() {
        // Several parts of rows, so the sums really are split across tasks.
        let d = 30;
        let rows = 3 * (HESSIAN_BLOCK_BYTES / (8 * d)) * BLOCKS_PER_PART + 11;
        let x = Mat::from_fn(rows, d, |i, j| {
            (((i * 13 + j * 29) % 101) as f64 - 50.0) / 400.0
        });
        let y: Vec<f64> = (0..rows)
            .map(|i| if (i * 7 + i / 3) % 5 < 2 { 1.0 } else { -1.0 })
            .collect();
        let scale: Vec<f64> = (0..rows).map(|i| 1.0 - (i % 3) as f64 * 0.2).collect();
        let b: Vec<f64> = (0..d).map(|j| (j as f64 - 15.0) / 7.0).collect();
        let u = vec![0.0; d];
        let fit = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                Objective {
                    x: x.as_ref(),
                    row_scale: &scale,
                    y: &y,
                    b: &b,
                    extra_ridge: 0.0,
                    lambda: 1.0 / rows as f64,
                    anchor: &u,
                }
                .minimise()
                .unwrap()
            })
        };
        let one = fit(1);
        assert_eq!(one, fit(2));
        assert_eq!(one, fit(3));
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
            x: x.as_ref(),
            row_scale: &[1.0; 20],
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

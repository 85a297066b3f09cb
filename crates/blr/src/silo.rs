//! A participant's contribution when it holds many rows (a hospital, "cross-silo"): the sum over
//! its rows of each projected record's statistics vector `[x_j x_k (j ≤ k)…, x_j y…, (y²)]`
//! ([`SuffStats::record_into`]), computed in one pass over rows that arrive in chunks, in memory
//! bounded by the block size and d², not by the number of rows.
//!
//! Sensitivity stays per record: the sum of a silo's rows is what the silo's DCA client sends,
//! and the release's noise is calibrated to one record changing (the DCA paper's eq. 18 bound
//! holds for each row after projection, whatever client holds it).
//!
//! **How.** Each row is projected as the pipeline does it ([`projection::clip::clip`] of every x
//! coordinate to `[-B_j, B_j]` and of y to `[-B_y, B_y]`) and written as one column `[x; y]` of a
//! `(d+1) × BLOCK` buffer `A`; the lower triangle of `A·Aᵀ` (faer's triangular matmul, the
//! AVX-512 SYRK-like kernel of private-gemm-x86) holds XᵀX, yᵀX and yᵀy of the block at once, so
//! the rows are read once and Xᵀy costs no second pass. Block Grams are added, in row order, into
//! an f64 accumulator.
//!
//! **Determinism.** Blocks are fixed runs of [`block_rows`]`(d)` rows counted from the first row
//! pushed, whatever the chunking; every block's Gram is computed single-threaded by the same code
//! on its own aligned buffer, and the block results are added to the accumulator one after
//! another in row order. Threads only compute several blocks at once. So the same rows give the
//! same bits for **any thread count and any chunking** of the rows into `push_rows` calls (the
//! tests check both). A different order of the rows may change the last bits (floating-point
//! addition is not associative); exactly representable sums (small integers) never change. The
//! bits are those of one machine's kernel: faer picks its AVX-512 or AVX2 kernel at run time, so
//! a participant on another CPU may differ in the last bits (parties that must agree bit for bit
//! compute on the same kind of CPU). One row is the exception: its sum is each entry's single
//! rounded product, exactly [`SuffStats::record_into`] everywhere.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, Par};
use projection::clip::clip;
use rayon::prelude::*;

use crate::data::{CsvChunks, CsvSchema};
use crate::error::{CsvError, Error, Result};
use crate::stats::SuffStats;

/// Rows per block: the unit of the fixed summation order.
///
/// Large enough that the Gram kernel runs at full speed (its inner dimension is the block's row
/// count) and the per-block addition into the `(d+1)²/2` accumulator costs under 1/2000 of the
/// block's multiply-adds; small enough that a block of d = 1000 stays at 16 MB. Single-threaded
/// at n = 5·10⁴, d = 1000 blocks of 512 to 8192 rows were within the machine's noise of each
/// other (1.23–1.46 s). A function of d only, so the summation order never depends on how rows
/// arrive.
pub fn block_rows(d: usize) -> usize {
    if d <= 256 { 4096 } else { 2048 }
}

/// The streaming sum of a participant's projected record statistics.
///
/// ```
/// use blr::silo::RecordSum;
///
/// // Two rows, x = (1, 2) and (3, -4), y = 1 and 2; bounds B = (2, 2), B_y = 10 clip 3 to 2 and
/// // -4 to -2.
/// let mut sum = RecordSum::new(2, true, Some((&[2.0, 2.0], 10.0)))?;
/// sum.push_rows(&[1.0, 2.0, 3.0, -4.0], &[1.0, 2.0])?;
/// let (flat, rows) = sum.finish()?;
/// // [x0², x0x1, x1², x0y, x1y, y²] summed over (1, 2, 1) and (2, -2, 2).
/// assert_eq!(flat, vec![1.0 + 4.0, 2.0 - 4.0, 4.0 + 4.0, 1.0 + 4.0, 2.0 - 4.0, 1.0 + 4.0]);
/// assert_eq!(rows, 2);
/// # Ok::<(), blr::Error>(())
/// ```
#[derive(Debug)]
pub struct RecordSum {
    d: usize,
    with_yy: bool,
    bounds: Option<(Vec<f64>, f64)>,
    block: usize,
    /// One `(d+1) × block` buffer per block computed at once; column i is row i's `[x; y]`.
    buffers: Vec<Mat<f64>>,
    /// Each buffer's Gram (lower triangle), before it is added to `acc`.
    grams: Vec<Mat<f64>>,
    /// Rows pending in `buffers`, filled in order buffer 0, 1, …
    pending: usize,
    /// Lower triangle of Σ [x; y][x; y]ᵀ over the flushed rows.
    acc: Mat<f64>,
    rows: usize,
    /// Set by the first bad chunk: the sum then holds part of it and must never be released.
    poisoned: bool,
}

impl RecordSum {
    /// An empty sum of records with `d` inputs. `projection`: the bounds `(B_x, B_y)` every
    /// record is clipped to first (`B_x` one per input, all finite and > 0), or `None` for rows
    /// that are already projected. `with_yy` appends Σy² to the result, as
    /// [`SuffStats::to_flat`] does.
    ///
    /// # Errors
    /// `d = 0`, bounds of the wrong length or not finite and positive, or a d whose statistics do
    /// not fit in memory.
    pub fn new(d: usize, with_yy: bool, projection: Option<(&[f64], f64)>) -> Result<Self> {
        if d == 0 {
            return Err(Error::Empty {
                what: "record sum dimension d",
            });
        }
        SuffStats::checked_flat_len(d, with_yy)?;
        let bounds = match projection {
            None => None,
            Some((bx, by)) => {
                if bx.len() != d {
                    return Err(Error::LengthMismatch {
                        what: "projection bounds (one per input)",
                        expected: d,
                        got: bx.len(),
                    });
                }
                projection::error::check_bounds(bx, "projection bounds of x")?;
                projection::error::check_bounds(&[by], "projection bound of y")?;
                Some((bx.to_vec(), by))
            }
        };
        Ok(RecordSum {
            d,
            with_yy,
            bounds,
            block: block_rows(d),
            buffers: Vec::new(),
            grams: Vec::new(),
            pending: 0,
            acc: Mat::zeros(d + 1, d + 1),
            rows: 0,
            poisoned: false,
        })
    }

    /// Number of inputs d.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds the rows of the row-major `x` (`y.len() × d`) with targets `y`.
    ///
    /// # Errors
    /// A length mismatch (nothing is added), or a NaN or infinite value, named by its row in
    /// this chunk and its column: the sum then holds part of the chunk, so it refuses every
    /// later call and [`RecordSum::finish`] — a bad file yields nothing.
    pub fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        self.check_usable()?;
        let d = self.d;
        if x.len() != y.len().saturating_mul(d) || (x.len() / d) != y.len() {
            return Err(Error::LengthMismatch {
                what: "x chunk (rows × d, rows = y.len())",
                expected: y.len().saturating_mul(d),
                got: x.len(),
            });
        }
        // The group holds at least the blocks already pending, should the pool have shrunk
        // since the last call: a flush then still falls on a block boundary.
        let group = rayon::current_num_threads()
            .max(1)
            .max(self.pending.div_ceil(self.block));
        while self.buffers.len() < group {
            self.buffers.push(Mat::zeros(d + 1, self.block));
            self.grams.push(Mat::zeros(d + 1, d + 1));
        }
        let rows = y.len();
        let mut done = 0;
        while done < rows {
            let take = (group * self.block - self.pending).min(rows - done);
            let (xs, ys) = (&x[done * d..(done + take) * d], &y[done..done + take]);
            if let Err(e) = self.fill(xs, ys, done) {
                self.poisoned = true;
                return Err(e);
            }
            self.pending += take;
            self.rows += take;
            done += take;
            // Flushing only at block boundaries keeps the blocks fixed runs of rows from the
            // first one, whatever the pool's size was at each call.
            if self.pending == group * self.block {
                self.flush();
            }
        }
        Ok(())
    }

    /// The flat sum `[Σ x_j x_k (j ≤ k)…, Σ x_j y…, (Σ y²)]` in the layout of
    /// [`SuffStats::to_flat`], and the number of rows. Zero rows give zeros.
    ///
    /// # Errors
    /// An earlier chunk was bad, or the sum overflowed to infinity (rows not projected).
    pub fn finish(mut self) -> Result<(Vec<f64>, usize)> {
        self.check_usable()?;
        self.flush();
        let d = self.d;
        let mut flat = Vec::with_capacity(SuffStats::flat_len(d, self.with_yy));
        for j in 0..d {
            // Lower (k, j), k ≥ j, is upper (j, k): column j from the diagonal down.
            flat.extend((j..d).map(|k| self.acc[(k, j)]));
        }
        flat.extend((0..d).map(|j| self.acc[(d, j)]));
        if self.with_yy {
            flat.push(self.acc[(d, d)]);
        }
        projection::error::check_finite(&flat, flat.len().max(1), "summed record statistics")?;
        Ok((flat, self.rows))
    }

    /// [`RecordSum::finish`] as [`SuffStats`].
    pub fn finish_stats(self) -> Result<SuffStats> {
        let (d, with_yy) = (self.d, self.with_yy);
        let (flat, n) = self.finish()?;
        SuffStats::from_flat(&flat, d, n, with_yy)
    }

    fn check_usable(&self) -> Result<()> {
        if self.poisoned {
            return Err(Error::OutOfRange {
                name: "record sum",
                value: f64::NAN,
                requirement: "free of a rejected chunk (an earlier push_rows failed)",
            });
        }
        Ok(())
    }

    /// Projects `x`, `y` (rows that fit the pending group) into the buffers after the pending
    /// rows, every buffer on its own thread: at n = 10⁶, d = 100 this was 1.24× faster than the
    /// copy on the calling thread (median of 7 interleaved pairs of `silo_gram memory 1000000
    /// 100 3`, 0.51 against 0.60 s, load ≈ 4). Errors name the first bad row, counted from the
    /// caller's chunk (`x` starts at its row `offset`).
    fn fill(&mut self, x: &[f64], y: &[f64], offset: usize) -> Result<()> {
        let (d, block, pending) = (self.d, self.block, self.pending);
        let (first, last) = (pending / block, (pending + y.len()).div_ceil(block));
        let bounds = self.bounds.as_ref();
        let bad = self.buffers[first..last]
            .par_iter_mut()
            .enumerate()
            .map(|(k, buf)| {
                let b = first + k;
                // This buffer's columns [c0, c1) take the chunk's rows [r0, r0 + c1 − c0).
                let c0 = if b == first { pending % block } else { 0 };
                let r0 = (b * block + c0) - pending;
                let c1 = block.min(c0 + y.len() - r0);
                for (c, r) in (c0..c1).zip(r0..) {
                    let (row, t) = (&x[r * d..(r + 1) * d], y[r]);
                    if let Some(j) = row.iter().chain([&t]).position(|v| !v.is_finite()) {
                        return Err((r, j));
                    }
                    let dst = buf
                        .col_mut(c)
                        .try_as_col_major_mut()
                        .expect("faer columns of an owned Mat are contiguous")
                        .as_slice_mut();
                    match bounds {
                        None => {
                            dst[..d].copy_from_slice(row);
                            dst[d] = t;
                        }
                        Some((bx, by)) => {
                            for ((o, &v), &b) in dst[..d].iter_mut().zip(row).zip(bx) {
                                *o = clip(v, b);
                            }
                            dst[d] = clip(t, *by);
                        }
                    }
                }
                Ok(())
            })
            .find_first(|r| r.is_err());
        match bad {
            Some(Err((r, j))) => Err(Error::Projection(projection::Error::NonFinite {
                what: if j < d { "x chunk" } else { "y chunk" },
                row: offset + r,
                column: if j < d { j } else { 0 },
                value: if j < d { x[r * d + j] } else { y[r] },
            })),
            _ => Ok(()),
        }
    }

    /// Adds the pending rows' Grams to the accumulator, block by block in row order.
    fn flush(&mut self) {
        if self.pending == 0 {
            return;
        }
        let (block, pending) = (self.block, self.pending);
        let used = pending.div_ceil(block);
        self.buffers[..used]
            .par_iter()
            .zip(self.grams[..used].par_iter_mut())
            .enumerate()
            .for_each(|(b, (buf, gram))| {
                let cols = (pending - b * block).min(block);
                let a = buf.subcols(0, cols);
                triangular::matmul(
                    gram.as_mut(),
                    BlockStructure::TriangularLower,
                    Accum::Replace,
                    a,
                    BlockStructure::Rectangular,
                    a.transpose(),
                    BlockStructure::Rectangular,
                    1.0,
                    // Sequential on purpose: the same block must give the same bits whatever
                    // the pool's size; the parallelism is across blocks.
                    Par::Seq,
                );
            });
        let n = self.d + 1;
        for gram in &self.grams[..used] {
            for j in 0..n {
                let src = gram
                    .col(j)
                    .try_as_col_major()
                    .expect("contiguous")
                    .as_slice();
                let dst = self
                    .acc
                    .col_mut(j)
                    .try_as_col_major_mut()
                    .expect("contiguous")
                    .as_slice_mut();
                for (a, g) in dst[j..].iter_mut().zip(&src[j..]) {
                    *a += g;
                }
            }
        }
        self.pending = 0;
    }
}

/// Rows per CSV chunk for `d` inputs: about 2²⁰ parsed values (8 MB, and about 20 MB of text
/// at 17 digits a value), at most 8192 rows: enough lines for the parsing threads to share, a
/// bounded buffer whatever the file's length. The sum does not depend on it.
pub fn csv_chunk_rows(d: usize) -> usize {
    ((1 << 20) / (d + 1)).clamp(64, 8192)
}

/// A participant's contribution from its CSV file: the flat statistics sum (layout of
/// [`SuffStats::to_flat`]) over every row, each projected first when `projection` is given, and
/// the number of rows. The file is streamed in chunks of `chunk_rows` rows (memory bounded by
/// the chunk and d², not the file); the sum is returned only after the whole file has been read
/// and checked, so a bad file yields an error and nothing else.
///
/// # Errors
/// Everything [`CsvChunks`] reports (file, line and column named), a file without data rows,
/// and [`RecordSum`]'s errors.
pub fn sum_csv(
    path: &std::path::Path,
    schema: &CsvSchema,
    with_yy: bool,
    projection: Option<(&[f64], f64)>,
    chunk_rows: usize,
) -> Result<(Vec<f64>, usize)> {
    let mut chunks = CsvChunks::open(path, schema, chunk_rows)?;
    sum_chunks(&mut chunks, with_yy, projection)
}

/// [`sum_csv`] over an opened reader.
pub fn sum_chunks<R: std::io::BufRead>(
    chunks: &mut CsvChunks<R>,
    with_yy: bool,
    projection: Option<(&[f64], f64)>,
) -> Result<(Vec<f64>, usize)> {
    let mut sum = RecordSum::new(chunks.d(), with_yy, projection)?;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    while chunks.next_chunk(&mut x, &mut y)? > 0 {
        sum.push_rows(&x, &y)?;
    }
    if sum.rows() == 0 {
        return Err(Error::Csv(CsvError::InFile {
            file: chunks.file().to_string(),
            error: Box::new(CsvError::NoRows),
        }));
    }
    sum.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    /// The reference: Σ over rows of `record_into` of the clipped row, a plain f64 loop.
    fn naive(
        x: &[f64],
        y: &[f64],
        d: usize,
        with_yy: bool,
        proj: Option<(&[f64], f64)>,
    ) -> Vec<f64> {
        let mut total = vec![0.0; SuffStats::flat_len(d, with_yy)];
        let mut rec = total.clone();
        for (row, &t) in x.chunks_exact(d).zip(y) {
            let (r, t): (Vec<f64>, f64) = match proj {
                None => (row.to_vec(), t),
                Some((bx, by)) => (
                    row.iter().zip(bx).map(|(v, b)| clip(*v, *b)).collect(),
                    clip(t, by),
                ),
            };
            SuffStats::record_into(&r, t, with_yy, &mut rec).unwrap();
            total.iter_mut().zip(&rec).for_each(|(a, b)| *a += b);
        }
        total
    }

    fn uniform(rng: &mut ChaCha8Rng, len: usize, scale: f64) -> Vec<f64> {
        (0..len)
            .map(|_| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale)
            .collect()
    }

    fn sum_in_chunks(
        x: &[f64],
        y: &[f64],
        d: usize,
        with_yy: bool,
        proj: Option<(&[f64], f64)>,
        chunk: usize,
    ) -> (Vec<f64>, usize) {
        let mut s = RecordSum::new(d, with_yy, proj).unwrap();
        for (xc, yc) in x.chunks(chunk * d).zip(y.chunks(chunk)) {
            s.push_rows(xc, yc).unwrap();
        }
        s.finish().unwrap()
    }

    #[test]
    fn hand_checked_two_rows_with_clipping() {
        // Rows (1, -5 | y 3) and (2, 0.5 | y -9); bounds (1.5, 2), B_y = 4: the clipped rows are
        // (1, -2 | 3) and (1.5, 0.5 | -4).
        let mut s = RecordSum::new(2, true, Some((&[1.5, 2.0], 4.0))).unwrap();
        s.push_rows(&[1.0, -5.0], &[3.0]).unwrap();
        s.push_rows(&[2.0, 0.5], &[-9.0]).unwrap();
        let (flat, rows) = s.finish().unwrap();
        assert_eq!(rows, 2);
        // x0²: 1 + 2.25; x0x1: -2 + 0.75; x1²: 4 + 0.25; x0y: 3 - 6; x1y: -6 - 2; y²: 9 + 16.
        assert_eq!(flat, vec![3.25, -1.25, 4.25, -3.0, -8.0, 25.0]);
        // Without yy the layout is SuffStats::to_flat(false): the same minus the last entry.
        let mut s = RecordSum::new(2, false, Some((&[1.5, 2.0], 4.0))).unwrap();
        s.push_rows(&[1.0, -5.0, 2.0, 0.5], &[3.0, -9.0]).unwrap();
        assert_eq!(s.finish().unwrap().0, vec![3.25, -1.25, 4.25, -3.0, -8.0]);
    }

    #[test]
    fn one_row_is_exactly_its_record_vector() {
        // A participant with one record sends what `record_into` gives, bit for bit (each entry
        // is one rounded product), so the one-record-per-client pipeline is unchanged.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for d in [1, 5, 17] {
            let x = uniform(&mut rng, d, 3.0);
            let y = uniform(&mut rng, 1, 3.0);
            let mut s = RecordSum::new(d, true, None).unwrap();
            s.push_rows(&x, &y).unwrap();
            let mut rec = vec![0.0; SuffStats::flat_len(d, true)];
            SuffStats::record_into(&x, y[0], true, &mut rec).unwrap();
            assert_eq!(s.finish().unwrap().0, rec);
        }
    }

    #[test]
    fn small_integers_are_summed_exactly_across_blocks() {
        // Integers in [-7, 7] over more than two blocks: every partial sum is an exact integer,
        // so any summation order must give the naive loop's result exactly.
        let d = 6;
        let n = 2 * block_rows(d) + 123;
        let x: Vec<f64> = (0..n * d)
            .map(|i| ((i * 31 + 7) % 15) as f64 - 7.0)
            .collect();
        let y: Vec<f64> = (0..n).map(|i| ((i * 17 + 3) % 15) as f64 - 7.0).collect();
        let bounds = [5.0, 7.0, 3.0, 7.0, 1.0, 6.0];
        for proj in [None, Some((&bounds[..], 4.0))] {
            let want = naive(&x, &y, d, true, proj);
            for chunk in [1, 1000, n] {
                assert_eq!(
                    sum_in_chunks(&x, &y, d, true, proj, chunk),
                    (want.clone(), n)
                );
            }
        }
    }

    #[test]
    fn random_rows_match_the_naive_sum() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (n, d) in [(1, 1), (9, 3), (5_000, 13), (1_500, 300)] {
            let x = uniform(&mut rng, n * d, 2.0);
            let y = uniform(&mut rng, n, 5.0);
            let bounds: Vec<f64> = (0..d).map(|j| 0.5 + (j % 4) as f64 * 0.5).collect();
            for proj in [None, Some((&bounds[..], 2.5))] {
                let want = naive(&x, &y, d, true, proj);
                let (got, rows) = sum_in_chunks(&x, &y, d, true, proj, 777);
                assert_eq!(rows, n);
                assert_eq!(got.len(), want.len());
                // Each entry is a sum of n terms bounded by 25 in magnitude.
                let tol = 1e-13 * 25.0 * n as f64;
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= tol, "n {n} d {d} entry {i}: {g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn same_bits_for_every_chunking_and_thread_count() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (n, d) = (3 * block_rows(40) + 1_001, 40);
        let x = uniform(&mut rng, n * d, 1.0);
        let y = uniform(&mut rng, n, 1.0);
        let reference = sum_in_chunks(&x, &y, d, true, None, n);
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for chunk in [1, 999, block_rows(d), n] {
                let got = pool.install(|| sum_in_chunks(&x, &y, d, true, None, chunk));
                let same = got
                    .0
                    .iter()
                    .zip(&reference.0)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same && got.1 == n, "threads {threads}, chunk {chunk}");
            }
        }
        // The pool changing size between calls (3, 1, 2, … threads) changes nothing either.
        let pools: Vec<_> = [3, 1, 2]
            .iter()
            .map(|&t| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap()
            })
            .collect();
        let mut s = RecordSum::new(d, true, None).unwrap();
        for (i, (xc, yc)) in x.chunks(1_234 * d).zip(y.chunks(1_234)).enumerate() {
            pools[i % 3].install(|| s.push_rows(xc, yc)).unwrap();
        }
        let got = s.finish().unwrap();
        assert!(
            got.0
                .iter()
                .zip(&reference.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
    }

    #[test]
    fn bad_input_is_refused_and_poisons_the_sum() {
        assert!(RecordSum::new(0, true, None).is_err());
        assert!(RecordSum::new(2, true, Some((&[1.0], 1.0))).is_err());
        assert!(RecordSum::new(2, true, Some((&[1.0, 0.0], 1.0))).is_err());
        assert!(RecordSum::new(2, true, Some((&[1.0, 1.0], f64::INFINITY))).is_err());
        let mut s = RecordSum::new(2, true, None).unwrap();
        // A shape error adds nothing and leaves the sum usable.
        assert!(s.push_rows(&[1.0, 2.0, 3.0], &[1.0]).is_err());
        s.push_rows(&[1.0, 2.0], &[1.0]).unwrap();
        let e = s
            .push_rows(&[1.0, 2.0, 3.0, f64::NAN], &[1.0, 2.0])
            .unwrap_err();
        assert!(e.to_string().contains("row 1, column 1"), "{e}");
        // A bad row far into a large chunk is named by its row in that chunk.
        let mut big = RecordSum::new(2, true, None).unwrap();
        let n = 5 * block_rows(2) + 9;
        let (mut x, y) = (vec![0.5; 2 * n], vec![0.5; n]);
        x[2 * (n - 4)] = f64::INFINITY;
        let e = big.push_rows(&x, &y).unwrap_err();
        assert!(
            e.to_string().contains(&format!("row {}, column 0", n - 4)),
            "{e}"
        );
        assert!(s.push_rows(&[1.0, 2.0], &[1.0]).is_err());
        assert!(
            s.finish().is_err(),
            "a sum with a rejected chunk in it is never released"
        );
        // Unprojected rows can overflow; the overflowed sum is refused.
        let mut s = RecordSum::new(1, false, None).unwrap();
        s.push_rows(&[1e200], &[1.0]).unwrap();
        assert!(s.finish().is_err());
        // Zero rows: zeros and a count of 0.
        let s = RecordSum::new(2, true, None).unwrap();
        assert_eq!(s.finish().unwrap(), (vec![0.0; 6], 0));
    }

    fn schema(x: &[&str], y: &str) -> CsvSchema {
        CsvSchema {
            x: x.iter().map(|s| s.to_string()).collect(),
            y: y.to_string(),
        }
    }

    fn sum_text(text: &str, sch: &CsvSchema, chunk: usize) -> Result<(Vec<f64>, usize)> {
        let mut c = CsvChunks::from_reader(text.as_bytes(), "rows.csv", sch, chunk)?;
        sum_chunks(&mut c, true, Some((&[2.0, 2.0], 3.0)))
    }

    #[test]
    fn csv_rows_are_streamed_by_name_and_projected() {
        // Columns in another order than the schema, an unused text column, CRLF, a blank line.
        let text = "id,y,b,a\r\nP1,5,-1,1\r\n\r\nP2,-1,0.5,3\n";
        let sch = schema(&["a", "b"], "y");
        // Clipped rows (a, b | y): (1, -1 | 3), (2, 0.5 | -1).
        let want = vec![
            1.0 + 4.0,
            -1.0 + 1.0,
            1.0 + 0.25,
            3.0 - 2.0,
            -3.0 - 0.5,
            9.0 + 1.0,
        ];
        for chunk in [1, 2, 100] {
            assert_eq!(sum_text(text, &sch, chunk).unwrap(), (want.clone(), 2));
        }
        // The same rows from a file on disk, and through Table for a cross-check.
        let path = std::env::temp_dir().join(format!("dpdist-silo-{}.csv", std::process::id()));
        std::fs::write(&path, "a,b,y\n1,-1,5\n3,0.5,-1\n").unwrap();
        let got = sum_csv(&path, &sch, true, Some((&[2.0, 2.0], 3.0)), 7);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got.unwrap(), (want, 2));
    }

    #[test]
    fn bad_csv_files_name_file_line_and_column_and_yield_nothing() {
        let sch = schema(&["a", "b"], "y");
        let msg = |text: &str| sum_text(text, &sch, 2).unwrap_err().to_string();
        // Errors in a late chunk still fail the whole file (nothing summed is returned).
        let good = "a,b,y\n1,2,3\n4,5,6\n7,8,9\n";
        let cases = [
            (
                format!("{good}1,,3\n"),
                "rows.csv: line 5, column 2 ('b'): missing value",
            ),
            (
                format!("{good}1,x,3\n"),
                "rows.csv: line 5, column 2 ('b'): 'x' is not a number",
            ),
            (
                format!("{good}1,2,NaN\n"),
                "rows.csv: line 5, column 3 ('y'): NaN is not finite",
            ),
            (
                format!("{good}1,2,inf\n"),
                "rows.csv: line 5, column 3 ('y'): inf is not finite",
            ),
            (
                format!("{good}1,2\n"),
                "rows.csv: line 5 has 2 cells, the header has 3",
            ),
            (format!("{good}1,2,3,4\n"), "rows.csv: line 5 has 4 cells"),
            (
                "a,b,y\n".to_string(),
                "rows.csv: the file has a header but zero data rows",
            ),
            (String::new(), "rows.csv: the file is empty"),
            (
                "a,b,z\n1,2,3\n".to_string(),
                "rows.csv: no column named 'y'",
            ),
            (
                "a,a,y\n1,2,3\n".to_string(),
                "rows.csv: column name 'a' appears twice",
            ),
        ];
        for (text, want) in cases {
            let got = msg(&text);
            assert!(got.contains(want), "{text:?}: {got}");
        }
        // The first bad line in file order is the one reported, whatever the parallel parse did.
        let many: String = std::iter::once("a,b,y\n".to_string())
            .chain((0..500).map(|i| {
                if i == 300 || i == 400 {
                    "1,q,1\n".into()
                } else {
                    "1,2,3\n".into()
                }
            }))
            .collect();
        assert!(
            sum_text(&many, &sch, 1000)
                .unwrap_err()
                .to_string()
                .contains("line 302,")
        );
        let e = sum_text(good, &schema(&["a", "y"], "y"), 2).unwrap_err();
        assert!(e.to_string().contains("names column 'y' twice"), "{e}");
        let e = sum_text(good, &schema(&["a", "nope"], "y"), 2).unwrap_err();
        assert!(e.to_string().contains("no column named 'nope'"), "{e}");
        // A read error after good chunks (the reader runs a chunk ahead of the parser) is still
        // an error of the whole file.
        struct FailsAfter(&'static [u8]);
        impl std::io::Read for FailsAfter {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() {
                    return Err(std::io::Error::other("disk on fire"));
                }
                let n = buf.len().min(self.0.len()).min(4);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = b"a,b,y\n1,2,3\n4,5,6\n7,8,9\n";
        let reader = std::io::BufReader::with_capacity(4, FailsAfter(text));
        let mut c = CsvChunks::from_reader(reader, "rows.csv", &sch, 1).unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        assert_eq!(c.next_chunk(&mut x, &mut y).unwrap(), 1);
        let e = sum_chunks(&mut c, true, None).unwrap_err().to_string();
        assert!(e.contains("rows.csv: read failed: disk on fire"), "{e}");
        let e = sum_csv(
            std::path::Path::new("/nonexistent/rows.csv"),
            &sch,
            true,
            None,
            8,
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("/nonexistent/rows.csv: read failed")
        );
    }

    #[test]
    fn finish_stats_matches_suffstats_compute() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let (n, d) = (300, 7);
        let x = uniform(&mut rng, n * d, 1.0);
        let y = uniform(&mut rng, n, 1.0);
        let mut s = RecordSum::new(d, true, None).unwrap();
        s.push_rows(&x, &y).unwrap();
        let got = s.finish_stats().unwrap();
        let want = SuffStats::compute(&x, &y, n, d).unwrap();
        assert_eq!((got.n, got.d), (n, d));
        for (g, w) in got.to_flat(true).iter().zip(&want.to_flat(true)) {
            assert!((g - w).abs() < 1e-11, "{g} vs {w}");
        }
    }
}

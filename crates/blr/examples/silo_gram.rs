//! Times a participant's local statistics: XᵀX, Xᵀy (and yᵀy) of n rows × d inputs by
//! `blr::silo::RecordSum`, in memory or streamed from a CSV file. NON-PRIVATE: a speed
//! measurement; nothing is released. The yardstick is scripts/bench-gram-numpy.py on the same
//! sizes; docs/src/results/silo-statistics.md has the commands and the numbers.
//!
//! ```text
//! cargo run --release -p blr --example silo_gram -- memory 1000000 100 5
//! cargo run --release -p blr --example silo_gram -- write-csv 1000000 100 /tmp/rows.csv
//! cargo run --release -p blr --example silo_gram -- csv /tmp/rows.csv 3
//! ```

use std::process::ExitCode;
use std::time::Instant;

use blr::data::CsvSchema;
use blr::silo::{RecordSum, sum_csv};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

fn uniform(rng: &mut ChaCha8Rng, len: usize) -> Vec<f64> {
    // 53 random bits → [0, 1) → [-1, 1).
    (0..len)
        .map(|_| (rng.next_u64() >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, String> {
    args.get(i)
        .ok_or_else(|| format!("missing {what}"))?
        .parse()
        .map_err(|_| format!("{what}: '{}' is not valid", args[i]))
}

fn run(args: &[String]) -> Result<(), String> {
    let mode = args.first().map(String::as_str).unwrap_or("");
    match mode {
        "memory" => {
            let n: usize = arg(args, 1, "n")?;
            let d: usize = arg(args, 2, "d")?;
            let reps: usize = arg(args, 3, "reps").unwrap_or(5);
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let x = uniform(&mut rng, n * d);
            let y = uniform(&mut rng, n);
            let flops = (n * d * d) as f64 * 2.0;
            let mut times = Vec::new();
            for r in 0..reps {
                let t = Instant::now();
                let (flat, rows) = if std::env::var_os("SILO_GRAM_WHOLE").is_some() {
                    // The one-shot path (faer on the whole matrix, multithreaded, then an Xᵀy
                    // loop): what `SuffStats::compute` did before the streaming sum.
                    let s = blr::SuffStats::compute(&x, &y, n, d).map_err(|e| e.to_string())?;
                    (s.to_flat(true), n)
                } else {
                    let mut sum = RecordSum::new(d, true, None).map_err(|e| e.to_string())?;
                    sum.push_rows(&x, &y).map_err(|e| e.to_string())?;
                    sum.finish().map_err(|e| e.to_string())?
                };
                let s = t.elapsed().as_secs_f64();
                println!(
                    "rep {r}: {s:.4} s  (n {rows}, d {d}, XᵀX + Xᵀy + yᵀy; checksum {:.6e})",
                    flat.iter().sum::<f64>()
                );
                times.push(s);
            }
            let m = median(times);
            println!(
                "median_s {m:.4}  gemm-equivalent GFLOP/s {:.1}  (one triangle: {:.1} real)  \
                 threads {}",
                flops / m / 1e9,
                flops / 2.0 / m / 1e9,
                rayon::current_num_threads()
            );
        }
        "write-csv" => {
            let n: usize = arg(args, 1, "n")?;
            let d: usize = arg(args, 2, "d")?;
            let path: String = arg(args, 3, "path")?;
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let file = std::fs::File::create(&path).map_err(|e| format!("{path}: {e}"))?;
            let mut out = std::io::BufWriter::new(file);
            use std::io::Write;
            let header: Vec<String> = (0..d)
                .map(|j| format!("x{j}"))
                .chain(["y".into()])
                .collect();
            writeln!(out, "{}", header.join(",")).map_err(|e| e.to_string())?;
            let mut line = String::new();
            for _ in 0..n {
                line.clear();
                for (j, v) in uniform(&mut rng, d + 1).iter().enumerate() {
                    if j > 0 {
                        line.push(',');
                    }
                    // 17 significant digits: the f64 read back is the one written.
                    line.push_str(&format!("{v:.16e}"));
                }
                writeln!(out, "{line}").map_err(|e| e.to_string())?;
            }
            out.flush().map_err(|e| e.to_string())?;
            println!("wrote {n} rows × {} columns to {path}", d + 1);
        }
        "csv" => {
            let path: String = arg(args, 1, "path")?;
            let reps: usize = arg(args, 2, "reps").unwrap_or(3);
            let mut times = Vec::new();
            for r in 0..reps {
                let t = Instant::now();
                let (flat, rows, d) = csv_sum(&path)?;
                let s = t.elapsed().as_secs_f64();
                println!(
                    "rep {r}: {s:.4} s  (n {rows}, d {d}, streamed; checksum {:.6e})",
                    flat.iter().sum::<f64>()
                );
                times.push(s);
            }
            println!("median_s {:.4}", median(times));
        }
        _ => {
            return Err(
                "usage: silo_gram memory N D [REPS] | write-csv N D PATH | csv PATH [REPS]".into(),
            );
        }
    }
    Ok(())
}

/// Streams `path` (inputs: every column but `y`) through `blr::silo::sum_csv`.
fn csv_sum(path: &str) -> Result<(Vec<f64>, usize, usize), String> {
    let header = std::fs::File::open(path)
        .and_then(|f| {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(f), &mut line)?;
            Ok(line)
        })
        .map_err(|e| format!("{path}: {e}"))?;
    let x: Vec<String> = header
        .trim_end()
        .split(',')
        .filter(|c| *c != "y")
        .map(str::to_string)
        .collect();
    let d = x.len();
    let schema = CsvSchema { x, y: "y".into() };
    let (flat, rows) = sum_csv(
        std::path::Path::new(path),
        &schema,
        true,
        None,
        blr::silo::csv_chunk_rows(d),
    )
    .map_err(|e| e.to_string())?;
    Ok((flat, rows, d))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("silo_gram: {e}");
            ExitCode::FAILURE
        }
    }
}

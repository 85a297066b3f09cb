"""diffprivlib peer for PLR (benches/peers.rs `plr`): same data file, same ε.

    OPENBLAS_NUM_THREADS=1 python3 benches/peers/plr_diffprivlib.py /tmp/plr.bin 50000 100 1.0

diffprivlib.models.LogisticRegression(epsilon=ε, data_norm=1.0) — objective perturbation
(Chaudhuri et al. 2011) minimised by scikit-learn's lbfgs — on rows with ‖x‖ ≤ 1, default C.
Prints the median fit time of 5 fits (fresh noise each) and their mean test AUC. Not part of
the test command; needs numpy, scikit-learn < 1.6 and diffprivlib.
"""
import sys
import time
import warnings

import numpy as np
from diffprivlib.models import LogisticRegression
from sklearn.metrics import roc_auc_score

path, n, d, eps = sys.argv[1], int(float(sys.argv[2])), int(float(sys.argv[3])), float(sys.argv[4])
raw = np.fromfile(path, dtype="<f8")
xtr, ytr = raw[: n * d].reshape(n, d), raw[n * d : n * d + n]
off = n * d + n
xte, yte = raw[off : off + n * d].reshape(n, d), raw[off + n * d : off + n * d + n]
times, aucs = [], []
warnings.filterwarnings("ignore")
for seed in range(5):
    model = LogisticRegression(epsilon=eps, data_norm=1.0, random_state=seed)
    t = time.perf_counter()
    model.fit(xtr, ytr)
    times.append(time.perf_counter() - t)
    aucs.append(roc_auc_score(yte, model.predict_proba(xte)[:, 1]))
times.sort()
print(f"diffprivlib LogisticRegression eps={eps} n={n} d={d}: median fit {times[2]*1e3:.1f} ms "
      f"(min {times[0]*1e3:.1f}), mean test AUC {np.mean(aucs):.4f}")

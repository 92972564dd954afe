"""Coverage of the report's 95 % bootstrap intervals with few repetitions: BCa (what wirelab.analysis
uses) against the plain percentile interval, for the mean of n repetitions drawn from a normal and a
right-skewed (log-normal, σ = 0.5, like load times) distribution. Prints the share of intervals that
contain the true mean. docs/reproducing.md quotes its output.

    .venv/bin/python scripts/bootstrap_coverage.py [--trials 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from wirelab import analysis


def coverage(draw, true_mean: float, n: int, trials: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    bca = pct = 0
    for i in range(trials):
        sample = draw(rng, n)
        low, high = analysis.bootstrap_ci(sample, seed=seed, key=i, n_boot=analysis.N_BOOT)
        bca += low <= true_mean <= high
        means = sample[rng.integers(0, n, size=(analysis.N_BOOT, n))].mean(axis=1)
        plow, phigh = np.quantile(means, [0.025, 0.975])
        pct += plow <= true_mean <= phigh
    return bca / trials, pct / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    cases = {
        "normal": (lambda rng, n: rng.normal(100.0, 10.0, n), 100.0),
        "log-normal": (lambda rng, n: rng.lognormal(0.0, 0.5, n), float(np.exp(0.5**2 / 2))),
    }
    print(
        f"coverage of the true mean by 95 % intervals ({args.trials} samples each, "
        f"{analysis.N_BOOT} resamples)"
    )
    print(f"{'distribution':<12} {'n':>3} {'BCa':>7} {'percentile':>11}")
    for name, (draw, true_mean) in cases.items():
        for n in (3, 5, 10, 20):
            bca, pct = coverage(draw, true_mean, n, args.trials, seed=n)
            print(f"{name:<12} {n:>3} {bca:>7.3f} {pct:>11.3f}")


if __name__ == "__main__":
    main()

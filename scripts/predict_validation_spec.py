"""Write experiments/predict-validation(.quick).toml: the prediction model's labelled set (docs/predict.md).

A seeded random sample of configurations — page (study E's corpus, web200 and mobile200 pages), one
origin or one per domain, RTT, rate, loss, gateway queue, TLS version and initial window — each a
trial over h1s, h2 and h3. A configuration whose slowest protocol would take the emulator more than
``--budget`` seconds per load (``wirelab._reproduce``'s rough load time, the estimate `wirelab
reproduce ls` prints) is drawn again, so the set can be labelled on one machine: a multi-megabyte page
at 256 kbit/s takes minutes per load. The predictions are validated inside that region only.

The spec lists its configurations as one zip group, so it is self-contained and its trial ids do not
depend on this script; the script is the one way the two files are written
(``tests/test_predict.py`` checks that they are its output).

Usage: scripts/predict_validation_spec.py [--check]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wirelab import _facts  # noqa: E402
from wirelab import _reproduce as reproduce  # noqa: E402
from wirelab._engine import find_engine  # noqa: E402

PROTOCOLS = ["h1s", "h2", "h3"]
QUEUES = [16, 32, 64, 128, 256, 512, 1024]
IWS = [4, 16, 32]


@dataclass(frozen=True)
class Variant:
    name: str
    count: int
    repetitions: int
    seed: int
    budget_s: float


VARIANTS = {
    "quick": Variant("predict-validation-quick", 300, 3, 28, 15.0),
    "full": Variant("predict-validation", 1000, 5, 2028, 20.0),
}


def generated_pages(engine: str) -> dict[str, tuple[int, int, int]]:
    """Page name → (objects, bytes, domains) of every page of the named generated corpora."""
    out = {}
    for corpus in _facts.generated_corpora():
        listing = json.loads(
            subprocess.run(
                [engine, "pages", "ls", "--corpus", corpus], check=True, capture_output=True, text=True
            ).stdout
        )
        for p in listing["pages"]:
            out[p["name"]] = (p["objects"], p["total_bytes"], p["domains"])
    return out


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw(rng: random.Random, corpus: list[str], generated: list[str]) -> dict:
    """One configuration, before the budget check."""
    page = rng.choice(corpus) if rng.random() < 0.3 else rng.choice(generated)
    per_domain = rng.random() < 0.25
    rtt = round(log_uniform(rng, 20, 500))
    kbit = log_uniform(rng, 256, 20_000)
    kbit = round(kbit, -max(0, int(math.floor(math.log10(kbit))) - 2))  # three significant digits
    loss = 0.0 if rng.random() < 0.35 else round(log_uniform(rng, 0.1, 3.0), 2)
    return {
        "page": page,
        "shards": 0 if per_domain else 1,
        "shard_mode": "domain" if per_domain else "round-robin",
        "network.rtt": f"{rtt}ms",
        "network.bw": f"{int(kbit)}kbit",
        "network.loss": f"{loss:g}%",
        "network.queue": rng.choice(QUEUES),
        "network.iw": rng.choice(IWS) if rng.random() < 0.2 else 10,
        "server.tls_version": "1.2" if rng.random() < 0.15 else "1.3",
    }


def trial_spec(cfg: dict) -> dict:
    """The trial fields ``_reproduce``'s estimate reads."""
    net = f"rtt={cfg['network.rtt']},bw={cfg['network.bw']},loss={cfg['network.loss']}"
    return {"page": cfg["page"], "shards": cfg["shards"], "shard_mode": cfg["shard_mode"], "network": net}


def sample(
    v: Variant, corpus: list[str], generated: dict[str, tuple[int, int, int]]
) -> tuple[list[dict], int]:
    rng = random.Random(v.seed)
    names = sorted(generated, key=lambda n: (n.split(":")[0], int(n.split(":")[1])))
    configs: list[dict] = []
    seen = set()
    redrawn = 0
    while len(configs) < v.count:
        cfg = draw(rng, corpus, names)
        key = tuple(sorted(cfg.items()))
        spec = trial_spec(cfg)
        size = generated[cfg["page"]][:2] if cfg["page"] in generated else None
        slowest = max(reproduce._load_seconds(spec, p, size) for p in PROTOCOLS)
        if key in seen or slowest > v.budget_s:
            redrawn += 1
            continue
        seen.add(key)
        configs.append(cfg)
    return configs, redrawn


def render(v: Variant, configs: list[dict], redrawn: int) -> str:
    axes = list(configs[0])
    lines = [
        '# The prediction model\'s labelled set (docs/predict.md, "Validation"). Written by',
        "# scripts/predict_validation_spec.py — edit the script, not this file.",
        f"# {len(configs)} configurations drawn with seed {v.seed}: a page of study E's corpus (30 %) or of",
        "# web200/mobile200; one origin or one per domain (25 %); RTT 20–500 ms and rate 256 kbit/s–",
        "# 20 Mbit/s log-uniform; no loss (35 %) or 0.1–3 % log-uniform; queue 16–1024 packets;",
        "# IW 4/16/32 (20 %) or 10; TLS 1.2 (15 %) or 1.3. A draw whose slowest protocol would take",
        f"# more than {v.budget_s:g} s per load (wirelab reproduce's estimate) was drawn again",
        f"# ({redrawn} times).",
        "[sweep]",
        f'name = "{v.name}"',
        f'description = "prediction model validation: {len(configs)} random configurations over h1s, h2, h3, '
        f'{v.repetitions} repetitions"',
        "",
        "[base]",
        f"protocols = {json.dumps(PROTOCOLS)}",
        f"repetitions = {v.repetitions}",
        'network = { rtt = "100ms", bw = "1mbit" }',
        "",
        "[[grid.zip]]",
    ]
    for axis in axes:
        values = ", ".join(json.dumps(c[axis]) for c in configs)
        lines.append(f'"{axis}" = [{values}]')
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the files differ from the output")
    args = ap.parse_args()
    engine = str(find_engine())
    corpus = sorted(_facts.corpus())
    generated = generated_pages(engine)
    stale = []
    for variant, v in VARIANTS.items():
        configs, redrawn = sample(v, corpus, generated)
        text = render(v, configs, redrawn)
        path = (
            ROOT / "experiments" / ("predict-validation" + (".quick" if variant == "quick" else "") + ".toml")
        )
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
            continue
        path.write_text(text)
        print(f"{path}: {len(configs)} configurations, {redrawn} redrawn")
    if stale:
        print("stale: " + ", ".join(stale) + " (run scripts/predict_validation_spec.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

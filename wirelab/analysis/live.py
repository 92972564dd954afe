"""Live pages (``page = "url:…"``, docs/live.md): study E's live figures from stored loads.

A live sweep's configurations are sites (its ``page`` values are ``url:`` pages, one site each); these
functions key the loads by the site's host name and compute E's table of average gain per site and
the Time-on-Wire samples behind its CDF per protocol per site.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import pandas as pd

from wirelab import _facts
from wirelab.analysis.compare import gain
from wirelab.analysis.stats import N_BOOT, ok_loads

__all__ = ["LIVE_PREFIX", "is_live", "is_public", "site_gains", "site_of", "site_tow"]

#: What starts a live page (the engine's trial.LivePrefix).
LIVE_PREFIX = "url:"


def is_live(page: object) -> bool:
    """Whether ``page`` names a live URL."""
    return isinstance(page, str) and page.startswith(LIVE_PREFIX)


def site_of(page: str) -> str:
    """The site (host name, lower case) of a live page; the page itself for any other page."""
    if not is_live(page):
        return page
    host = urlsplit(page[len(LIVE_PREFIX) :]).hostname
    return host or page


def is_public(page: object) -> bool:
    """Whether ``page`` is a live page of a public site (not under the local internet's zone)."""
    if not is_live(page):
        return False
    site, zone = site_of(str(page)), _facts.lab_domain()
    return site != zone and not site.endswith("." + zone)


def _with_site(loads: pd.DataFrame) -> pd.DataFrame:
    """``loads`` keyed by site: its own ``site`` column when it has one, else the page's host."""
    if "site" in loads:
        return loads
    out = loads.copy()
    out["site"] = out["page"].map(site_of)
    return out


def site_tow(loads: pd.DataFrame) -> dict[str, dict[str, list[float]]]:
    """Per site (in order of appearance), per protocol: the ToW of every load without error (ms).
    ``loads`` needs ``page`` (or ``site``), ``protocol``, ``tow_ms`` and ``error``."""
    ok = _with_site(ok_loads(loads))
    out: dict[str, dict[str, list[float]]] = {}
    for (site, proto), group in ok.groupby(["site", "protocol"], sort=False):
        out.setdefault(str(site), {})[str(proto)] = group["tow_ms"].astype(float).tolist()
    return out


def site_gains(
    loads: pd.DataFrame,
    baseline: str,
    compared: Sequence[str],
    *,
    by: Sequence[str] = (),
    seed: int = 0,
    n_boot: int = N_BOOT,
    metric: str = "tow_ms",
) -> pd.DataFrame:
    """Study E's table of average gain per site: per site (and per ``by`` column, e.g. the network)
    and compared protocol, the mean ToW (or ``metric``: the report's ``--metric``) of the baseline and
    of the protocol, the gain (% reduction of the mean) and its bootstrap CI —
    :func:`wirelab.analysis.gain` keyed by site (``loads``' ``site`` column, else its page's host).
    Columns:
    ``site``, ``*by``, ``baseline``, ``protocol``, ``n_base``, ``n``, ``base_mean``, ``mean``,
    ``gain_pct``, ``ci_low``, ``ci_high``."""
    frame = _with_site(loads)
    parts = [
        gain(frame, ["site", *by], baseline, proto, metric, seed=seed, n_boot=n_boot) for proto in compared
    ]
    if not parts:
        cols = ["site", *by, "baseline", "protocol", "n_base", "n", "base_mean", "mean", "gain_pct"]
        return pd.DataFrame(columns=[*cols, "ci_low", "ci_high"])
    out = pd.concat(parts, ignore_index=True)
    # site by site (in order of appearance), each site's comparisons in the order of compared
    order = {site: i for i, site in enumerate(dict.fromkeys(frame["site"]))}
    return out.sort_values("site", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)

"""The cluster options' values (``--retries``, ``--artifacts``), defined once for the CLI, the
Python API and :mod:`wirelab._cluster` — here, so that reading them does not import Dask."""

from __future__ import annotations

__all__ = ["ARTIFACTS", "DEFAULT_ARTIFACTS", "DEFAULT_RETRIES"]

#: where a cluster trial's directory ends up: ``local`` (it comes back) or ``remote`` (pcaps and
#: server records stay on the worker)
ARTIFACTS = ("local", "remote")
DEFAULT_ARTIFACTS = "local"
#: how many times a trial whose worker was lost starts again elsewhere
DEFAULT_RETRIES = 2

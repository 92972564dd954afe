"""Predict before running: an analytic model of page loads over h1/h1s/h2/h3 (docs/predict.md).

``wirelab.predict`` and ``wirelab predict`` are the public doors (:mod:`._api`, :mod:`._cli`); the
rest is private: page facts from the engine (:mod:`._pages`), configurations (:mod:`._config`), plans
(:mod:`._plan`), the simulation (:mod:`._sim`) with the gateway's disciplines (:mod:`._gateway`), the
constants (:mod:`._constants`), labels (:mod:`._labels`), fitting and scoring (:mod:`._fit`,
:mod:`._validate`)."""

__all__: list[str] = []

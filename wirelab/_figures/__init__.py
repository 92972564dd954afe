"""Figures of the studies (matplotlib, Agg): :mod:`~wirelab._figures.plots` draws them from analysis
tables, :mod:`~wirelab._figures.rendering` writes PNG and SVG, :mod:`~wirelab._figures.corpus` draws a
corpus's characteristics. Colours and markers come from :mod:`wirelab._registry`. Callers import the
module they use (``from wirelab._figures import plots``); the package re-exports nothing."""

"""Predict before running: an analytic model of page loads over h1/h1s/h2/h3 (docs/predict.md)."""

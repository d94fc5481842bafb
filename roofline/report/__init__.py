"""Rendering: units for display, rich tables and matplotlib plots. Nothing here computes a prediction."""

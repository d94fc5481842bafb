"""Rendering: rich tables and matplotlib plots of results already computed. Nothing here predicts.

May import: advise, validate, lessons, measure, model, workload, hardware, errors, units (for types and
derived figures). Never commands.
"""

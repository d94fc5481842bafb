"""Answers composed from predictions: `advisor` (batch and precision sweep, recommendation), `reasons` (why,
in the profile's numbers), `explain` (compute vs memory of a device), `analyze` (a workload's totals).

May import: model, workload, hardware, errors, units. Never measure, validate, lessons, report, commands.
"""

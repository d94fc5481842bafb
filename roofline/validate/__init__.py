"""Live vs predicted: run a model on this machine, time it, predict the same steps and compare (`run`).

May import: measure, model, workload, hardware, errors, units. Never advise, lessons, report, commands.
"""

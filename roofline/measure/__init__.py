"""Measurements of this machine: the timing discipline (`timing`), the probes behind every calibrated figure
(`probes/`), their rounds (`rounds`), calibration into a profile (`calibrate`) and live PyTorch steps (`live`).

All timing goes through `roofline.measure.timing` (warm-up, inner-loop growth, repeats until the spread is
small, raw samples kept, synchronize before reading a clock). torch and numpy are imported inside the
functions that need them. May import: model (to fit the curves it measures), workload, hardware, errors,
units. Never advise, validate, lessons, report, commands.
"""

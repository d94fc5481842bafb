"""roofline: predict how fast a deep-learning model runs on a CPU or GPU, explain why, and check it live.

The package is layered one way only: hardware profiles and workloads are plain data, the cost model is a
pure function of (op, hardware, precision), the advisor composes predictions, and `cli.py` only parses and
renders. Nothing here imports torch at module level: commands that only predict must answer in well under
a second on a machine without it.
"""

__version__ = "0.1.0"

"""The textbook's performance lessons behind `roofline bench`, measured here beside the model's prediction:
`strategies` (naive vs blocked vs library GEMM) and `transfer` (when host-device copies cancel a GPU).

May import: measure, model, workload, hardware, errors, units. Never advise, validate, report, commands.
"""

"""The probes: what to time and how much work one call does. `gemm` (FLOP/s per dtype and size), `memory`
(bandwidth over a working-set sweep), `conv` (convolution efficiency), `kernels` (streaming rates, per-call
costs, first-touch), `overhead` (dispatch, launch, sync, copies), `heap` (the C heap's policy while timing).

May import: measure.timing, model, workload, hardware, errors, units.
"""

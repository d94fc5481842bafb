"""Microbenchmarks that measure this machine's real ceilings.

All timing goes through `roofline.bench.timing` (warm-up, inner-loop growth, repeats until the spread is
small, raw samples kept, synchronize before reading a clock). The other modules only say what to time and
how much work one call does: `gemm` (FLOP/s per dtype and size), `memory` (bandwidth over a working-set
sweep), `conv` (convolution efficiency), `overhead` (dispatch, launch, sync, host<->device copies),
`strategies` and `transfer` (the textbook lessons behind `roofline bench`). torch and numpy are imported
inside the functions that need them.
"""

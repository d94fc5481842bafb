"""The cost model: (workload, hardware, precision, batch) -> time, bound and memory, as pure functions.

`ceilings` (rates per memory level and dtype, calibrated curves), `costmodel` (one op's time), `step` (a
whole step: dispatch, copies, asynchronous queue), `memory` (what a step holds), `cpu_runtime/` (the C heap
beneath a CPU step). May import: workload, hardware, errors, units. Never measure, advise, report, commands.
"""

"""The cost model: (workload, hardware, precision, batch) -> time, bound and memory, as pure functions.

`ceilings` (rates per memory level and dtype, calibrated curves, the framework runtime profile's costs on a
GPU), `context` (what an op's cost depends on beyond op and device), `costmodel` (one op's time, from
`gemm_cost` and `conv_cost`, with `notes` saying why), `step` (a whole step: dispatch, copies, asynchronous
queue), `memory` (what a step holds), `cpu_runtime/` (the CPU runtime beneath the cost model: which kernel
PyTorch picks, the C heap; it never imports costmodel or step), `comm/` (collectives, data and tensor
parallelism over node and link profiles).
May import: workload, hardware, errors, units. Never measure, advise, report, commands.
`llm_precision`, `llm_runtime` and `llm_step` cost a served language model's prefill and decode.
"""

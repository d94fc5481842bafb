"""The CPU runtime beneath the cost model: which kernel PyTorch picks for a convolution (`backend`), glibc's
allocator (`allocator`) and the heap requests one eager PyTorch step makes (`heap_requests`), which together
say how many bytes a step first-touches, switched on by the libc and page size calibration recorded
(`runtime`).

May import: model.ceilings and model.context, workload, hardware, errors, units; never model.costmodel or
model.step, which read what it says (tests/test_layering.py).
"""

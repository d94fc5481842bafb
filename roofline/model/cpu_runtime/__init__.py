"""The CPU runtime beneath the cost model: glibc's allocator (`allocator`) and the heap requests one eager
PyTorch step makes (`heap_requests`), which together say how many bytes a step first-touches.

May import: the rest of model/, workload, hardware, errors, units.
"""

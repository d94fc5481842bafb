"""Model zoo: our own builders for well-known models, as op-IR workloads in pure Python (no torch) and as
torch modules with the same layers and layer names (torch imported only when a module is asked for)."""

from roofline.workload.zoo.registry import (
    ModelSpec,
    Reference,
    build_module,
    build_workload,
    example_input,
    get_model,
    list_models,
)

__all__ = ["ModelSpec", "Reference", "build_module", "build_workload", "example_input", "get_model", "list_models"]

"""GELU's tanh approximation as Hugging Face's `gelu_new` computes it: a Python formula, one kernel per operator.

transformers' NewGELUActivation (activations.py, unchanged from v4 to v5, the `activation_function` of GPT-2's
config.json) is

    0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))

which eager PyTorch runs as eight elementwise kernels, in Python's order of evaluation: `0.5 * input`, then
pow, `0.044715 *`, `input +`, `sqrt(2/pi) *`, tanh, `1.0 +`, and the final product. Autograd saves what each
derivative needs (the input for pow, tanh's output, both factors of the product) and its backward runs a
kernel per saved-tensor derivative, with the input's three gradients summed. The same function as one fused
kernel (nn.GELU(approximate='tanh'), transformers' `gelu_pytorch_tanh`) reads and writes each element once.
"""

from __future__ import annotations

from dataclasses import replace

from roofline.errors import RooflineError
from roofline.workload.ops.base import Dataflow, Op, Workload
from roofline.workload.ops.pointwise import Activation, Elementwise


def is_tanh_gelu(op: Op) -> bool:
    return type(op) is Activation and op.fn == "gelu_tanh"


def gelu_new_ops(op: Activation) -> list[tuple[Op, tuple[str, ...]]]:
    """The kernels of `op` as gelu_new runs them, each with what it reads ('x': the GELU's input); the last
    keeps `op`'s name, so whatever read the GELU reads it."""
    n, name = op.numel, op.name

    def scaled(suffix: str) -> Elementwise:
        return Elementwise(f"{name}.{suffix}", numel=n, inputs=1, op="mul")  # a tensor times a Python number

    return [
        (scaled("half"), ("x",)),                                                  # 0.5 * input
        (Activation(f"{name}.cube", numel=n, fn="cube"), ("x",)),                  # torch.pow(input, 3.0)
        (scaled("cubic_term"), (f"{name}.cube",)),                                 # 0.044715 * ...
        (Elementwise(f"{name}.inner", numel=n, inputs=2, op="add"), ("x", f"{name}.cubic_term")),
        (scaled("argument"), (f"{name}.inner",)),                                  # math.sqrt(2 / pi) * ...
        (Activation(f"{name}.tanh", numel=n, fn="tanh"), (f"{name}.argument",)),
        (Elementwise(f"{name}.one_plus", numel=n, inputs=1, op="add"), (f"{name}.tanh",)),  # 1.0 + tanh
        (Elementwise(name, numel=n, inputs=2, op="mul"), (f"{name}.half", f"{name}.one_plus")),
    ]


def has_tanh_gelu(workload: Workload) -> bool:
    return any(is_tanh_gelu(op) for op in workload.ops)


def with_gelu_new(workload: Workload) -> Workload:
    """`workload` with every tanh-approximated GELU replaced by gelu_new's kernels, the dataflow rewired through
    them. A workload without one is refused: the option would change nothing."""
    if not has_tanh_gelu(workload):
        raise RooflineError(f"--gelu-new prices the tanh GELU as Hugging Face's gelu_new formula, and "
                            f"{workload.name} has no tanh GELU (GPT-2's MLP has one)")
    flow = workload.flow()
    ops: list[Op] = []
    reads = dict(flow.reads)
    for op in workload.ops:
        if not is_tanh_gelu(op):
            ops.append(op)
            continue
        source = flow.reads.get(op.name, (op.name,))[0]
        for kernel, inputs in gelu_new_ops(op):
            ops.append(kernel)
            reads[kernel.name] = tuple(source if r == "x" else r for r in inputs)
    inplace = flow.inplace - {op.name for op in workload.ops if is_tanh_gelu(op)}
    return replace(workload, ops=ops, dataflow=Dataflow(reads, inplace))

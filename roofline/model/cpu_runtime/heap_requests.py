"""What eager PyTorch asks of the C heap in one step: the request sequence
`roofline.model.cpu_runtime.allocator` replays.

A result is freed when its last holder lets go of it: its last reader in the forward pass, and in training the
backward of every op that saved it (a convolution, a linear layer and a norm keep their input, ReLU its output,
max pooling its input and int64 indices). Around its result each kernel allocates temporaries, recorded with an
LD_PRELOAD malloc tracer around steady steps of eager PyTorch 2.13 (2 threads, AVX2):

- a oneDNN convolution over NCHW tensors reorders its input, its weight and its output into channel-blocked
  copies (ONEDNN_VERBOSE=1: aBcd8b activations and ABcd8b8a weights on AVX2, 16 on AVX-512, `block`
  channels); its backward reorders dY, the weight and dX for the data gradient, then dY, x and dW for the
  weight gradient, each time writing the plain NCHW result last;
- PyTorch's batch-1 fallback convolution fills an im2col buffer forward and backward;
- max pooling writes int64 indices (dropped in inference, saved in training);
- in training, an in-place activation whose derivative needs its input (hardswish) is preceded by autograd's
  clone of that input; batch norm's backward allocates a temporary beside dX; a tensor read by two ops gets
  its gradient summed into a new tensor; a broadcast multiply's gradient for the small operand is computed at
  full size and reduced; `zero_grad(set_to_none=True)` frees the weight gradients together at the step's end.

Requests of 1 KiB and more are generated (`allocator.TRACKED_MIN_BYTES`). Against recorded training steps
(tests/data; ResNet-18 and MobileNetV3-small at batch 8, 112 px) the generated requests of 64 KiB and more match
315 of 331 and 416 of 438 recorded ones in order (the rest: strided convolutions' backward scratch, the loss's
tensors, a second oneDNN path some depthwise weight gradients take), and the two sequences replay to the same
fresh bytes (89.1 against 89.2 MB, 40.2 against 40.2). Autograd's thousands of transient small objects (669
2144-byte oneDNN descriptors a ResNet-18 step) change nothing; what the model leaves out is the few small blocks
that outlive a step (one 3.2 KB block SGD's loop re-allocates; 6.5 and 6.9 KB ones in MobileNetV3-small's
backward and optimizer). Wherever glibc placed them, the heap cannot be trimmed below them, and where that is
depends on the process's history: with them, the recorded ResNet-18 step replays to 43 MB instead of 89, and
processes of the same script fault 0 to 100% of the unpinned figure (LOG.md). So in training the replay gives
what the allocator returns and takes back when nothing pins the heap's top: an upper bound of the fresh bytes.
"""

from __future__ import annotations

from roofline.model.context import CostContext
from roofline.model.cpu_runtime.allocator import Request, replay
from roofline.model.cpu_runtime.backend import cpu_conv_backend
from roofline.model.cpu_runtime.runtime import ASSUMED_PAGE_BYTES
from roofline.workload.ops.base import MODEL_INPUT, Dataflow, Op

INDEX_BYTES = 8
"""Max pooling's indices are int64."""


def _padded(channels: int, block: int) -> int:
    return -(-channels // block) * block


def _is_stem(op: Op) -> bool:
    """A dense stem (`Conv2d.stem`, no groups): oneDNN reads its few input channels as they are, with no
    blocked copy of the input. A grouped weight keeps its own layout (see `_blocked_weight`)."""
    return op.groups == 1 and op.stem  # type: ignore[attr-defined]


def _blocked_weight(op: Op, block: int) -> int:
    """Elements of oneDNN's blocked weight copy: output and input channels padded to `block` (a stem's input
    channels unpadded); a grouped weight as it is."""
    k, c, r, s, groups = op.k, op.c, op.r, op.s, op.groups  # type: ignore[attr-defined]
    if groups != 1:
        return k * r * s
    return _padded(k, block) * (c if _is_stem(op) else _padded(c, block)) * r * s


def _im2col_columns(op: Op) -> int:
    """Elements of PyTorch's batch-1 fallback's im2col buffer: C R S x P Q per sample, none for a 1x1 stride-1
    product (it multiplies the input as it is)."""
    r, s = op.r, op.s  # type: ignore[attr-defined]
    if (r, s) == (1, 1) and tuple(op.stride) == (1, 1) and op.pad == 0:  # type: ignore[attr-defined]
        return 0
    return op.c * r * s * op.p * op.q * op.n  # type: ignore[attr-defined]


def conv_temporaries(op: Op, block: int, layout: str) -> list[tuple[str, float]]:
    """What one forward convolution allocates around its result, in elements, as ('+name', elements) and
    ('-name', 0) in order; '+out' is the result. `layout` is 'onednn-nchw' (oneDNN over NCHW tensors),
    'onednn' (channels-last), 'slow2d' (PyTorch's batch-1 fallback, see `backend.cpu_conv_backend`).
    oneDNN over NCHW (ONEDNN_VERBOSE=1: aBcd8b activations and ABcd8b8a weights on AVX2, 16 on AVX-512,
    `block` channels): input copy, weight copy, output copy, then the weight and input copies freed, the
    NCHW result allocated and the output copy freed; a stem's few input channels are read as they are, and
    its weight keeps them unpadded."""
    n, c, h, w = op.n, op.c, op.h, op.w  # type: ignore[attr-defined]
    k, p, q = op.k, op.p, op.q  # type: ignore[attr-defined]
    stem = _is_stem(op)
    weight = _blocked_weight(op, block)
    if layout == "slow2d":
        return [("+columns", _im2col_columns(op)), ("+out", k * p * q * n), ("-columns", 0)]
    if layout == "onednn":
        return [("+weight", weight), ("+out", k * p * q * n), ("-weight", 0)]
    source = [] if stem else [("+source", n * _padded(c, block) * h * w)]
    return [*source, ("+weight", weight), ("+blocked", n * _padded(k, block) * p * q), ("-weight", 0),
            *([] if stem else [("-source", 0)]), ("+out", k * p * q * n), ("-blocked", 0)]


def forward_requests(op: Op, inplace: bool, conv_layout: str | None, block: int) -> list[tuple[str, float]]:
    """An op's own allocations in a forward pass, in elements ('+out' its result; see `conv_temporaries`)."""
    if op.is_free or inplace:
        return []
    if op.kind == "conv2d" and conv_layout:
        return conv_temporaries(op, block, conv_layout)
    if op.kind == "pool" and getattr(op, "mode", "") == "max":
        out = op.output_elements()
        return [("+out", out), ("+indices", out * INDEX_BYTES / 4), ("-indices", 0)]
    return [("+out", op.output_elements())]


def inference_requests(ops: list[Op], flow: Dataflow, element_bytes: int, block: int,
                       conv_layout: dict[str, str]) -> list[Request]:
    """The allocations and frees of one forward pass, in order: each op's own (`forward_requests`), then the
    results whose last reader it was. `conv_layout` maps a convolution's name to its kernel (see
    `conv_temporaries`); ops missing from `ops` (dropout in eval mode) are read through."""
    present = {op.name for op in ops}
    storage: dict[str, str] = {MODEL_INPUT: MODEL_INPUT}
    last_read: dict[str, int] = {}
    for index, op in enumerate(ops):
        reads = [storage.get(flow.source(r, present), MODEL_INPUT) for r in flow.reads.get(op.name, ())]
        aliases = op.is_free or op.name in flow.inplace
        storage[op.name] = reads[0] if aliases and reads else op.name
        for s in reads:
            last_read[s] = index
    freed_after: dict[int, list[str]] = {}
    for s, last in last_read.items():
        if s != MODEL_INPUT:
            freed_after.setdefault(last, []).append(s)
    out: list[Request] = []
    for index, op in enumerate(ops):
        own = op.name if storage[op.name] == op.name else None
        for action, elements in forward_requests(op, op.name in flow.inplace, conv_layout.get(op.name), block):
            name = action[1:]
            key = own if name == "out" else (op.name, name)
            if key is None:
                continue
            out.append(Request(index, key, elements * element_bytes if action[0] == "+" else 0.0))
        done = freed_after.get(index, [])
        if own and own not in last_read and index < len(ops) - 1:
            done = [*done, own]  # a result nothing reads
        out += [Request(index, s) for s in done]
    final = storage[ops[-1].name] if ops else MODEL_INPUT
    if final != MODEL_INPUT:
        out.append(Request(len(ops) - 1, final))
    return out


def conv_layout(op: Op, ctx: CostContext) -> str | None:
    """Which kernel allocates for a CPU convolution (see `conv_temporaries`); None on a GPU."""
    if ctx.ceilings.is_gpu:
        return None
    if cpu_conv_backend(op, ctx.ceilings.threads) != "mkldnn":
        return "slow2d"
    return "onednn" if ctx.channels_last else "onednn-nchw"


def conv_backward_temporaries(op: Op, block: int, layout: str, data: bool) -> list[tuple[str, float]]:
    """What one convolution's backward allocates, in elements, as in `conv_temporaries`: '+dx0' the input's
    gradient (when `data`), '+dw0' the weight's gradient, kept until `zero_grad`. oneDNN over NCHW: for the data
    gradient dY, the weight and dX reordered into blocked copies and dX written back to NCHW; for the weight
    gradient dY and x reordered again, dW computed blocked and reordered to plain. The fallback recomputes its
    im2col buffer for each gradient."""
    n, c, h, w = op.n, op.c, op.h, op.w  # type: ignore[attr-defined]
    k, p, q, r, s, groups = op.k, op.p, op.q, op.r, op.s, op.groups  # type: ignore[attr-defined]
    x = n * c * h * w
    dw = k * (c // groups) * r * s
    if layout == "slow2d":
        columns = _im2col_columns(op)
        data_part = [("+columns", columns), ("+dx0", x), ("-columns", 0)] if data else []
        return [*data_part, ("+columns", columns), ("+dw0", dw), ("-columns", 0)]
    stem = _is_stem(op)
    weight = _blocked_weight(op, block)
    if layout == "onednn":
        data_part = [("+weight", weight), ("+dx0", x), ("-weight", 0)] if data else []
        return [*data_part, ("+dw0", dw)]
    dy_blocked, x_blocked = n * _padded(k, block) * p * q, n * _padded(c, block) * h * w
    data_part = [("+dy", dy_blocked), ("+weight", weight), ("+dx_blocked", x_blocked), ("-weight", 0), ("-dy", 0),
                 ("+dx0", x), ("-dx_blocked", 0)] if data else []
    source = [] if stem else [("+source", x_blocked)]
    return [*data_part, ("+dy", dy_blocked), *source, ("+dw_blocked", weight), *([] if stem else [("-source", 0)]),
            ("-dy", 0), ("+dw0", dw), ("-dw_blocked", 0)]


def backward_temporaries(op: Op, layout: str | None, block: int, inputs: list[float],
                         data: list[bool]) -> list[tuple[str, float]]:
    """What one op's backward allocates, in elements: '+dx<i>' the gradient of its i-th input (of `inputs[i]`
    elements, only where `data[i]`), '+dw<j>' its j-th parameter's gradient (kept until `zero_grad`), other names
    temporaries freed within. An add hands dY to its inputs and a view hands it through (`training_requests`),
    so neither allocates."""
    params = [(f"+dw{j}", e) for j, e in enumerate(op.param_sizes())]
    if op.kind == "conv2d" and layout:
        return conv_backward_temporaries(op, block, layout, data[0]) + params[1:]
    if op.kind == "elementwise" and getattr(op, "op", "") == "mul":
        full = op.output_elements()
        return [g for i, e in enumerate(inputs) if data[i]
                for g in ([(f"+dx{i}", e)] if e >= full else [("+product", full), (f"+dx{i}", e), ("-product", 0)])]
    grads = [(f"+dx{i}", e) for i, e in enumerate(inputs) if data[i]]
    if op.kind == "norm":
        grads = [("+scratch", inputs[0]), *grads, ("-scratch", 0)]
    return grads + params


def training_requests(ops: list[Op], flow: Dataflow, element_bytes: int, weight_bytes: int, block: int,
                      conv_layout: dict[str, str]) -> list[Request]:
    """The allocations and frees of one training step (forward, backward, optimizer, `zero_grad`), in order.
    Request.op is the position in the step: forward of op i at i, its backward at 2 n - 1 - i (autograd runs
    the nodes in reverse creation order), `zero_grad` at the last. SGD updates in place and allocates nothing.
    The loss's own small tensors are left out."""
    n = len(ops)
    index = {op.name: i for i, op in enumerate(ops)}
    present = set(index)
    reads = {op.name: [flow.source(r, present) for r in flow.reads.get(op.name, ())] for op in ops}
    storage = flow.storages(ops)
    grad: dict[str, bool] = {MODEL_INPUT: False}
    for op in ops:
        grad[op.name] = bool(op.params()) or any(grad.get(r, False) for r in reads[op.name])
    clones = {op.name for op in ops if grad[op.name] and op.name in flow.inplace and op.saves_input}

    def backward_at(i: int) -> int:
        return 2 * n - 1 - i

    release: dict[str, int] = {}
    """Storage -> the position of its last holder: a forward reader, or the backward of an op that saved it."""

    def hold(key: str, at: int) -> None:
        release[key] = max(release.get(key, at), at)

    for i, op in enumerate(ops):
        stored = [storage.get(r, MODEL_INPUT) for r in reads[op.name]]
        for key in stored:
            hold(key, i)
        if storage[op.name] == op.name:
            hold(op.name, i)
        if not grad[op.name]:
            continue
        saved = stored if op.kind == "elementwise" and getattr(op, "op", "") in ("mul", "div") else (
            [f"{op.name}:clone"] if op.name in clones else stored[:1] if op.saves_input else [])
        saved += [storage[op.name]] if op.saves_output else []
        saved += [f"{op.name}:indices"] if op.kind == "pool" and getattr(op, "mode", "") == "max" else []
        for key in saved:
            hold(key, backward_at(i))
    final = storage[ops[-1].name]
    freed_at: dict[int, list[str]] = {}
    for key, at in release.items():
        if key not in (MODEL_INPUT, final):
            freed_at.setdefault(at, []).append(key)

    out: list[Request] = []
    refs: dict[object, int] = {}

    def new(at: int, key: object, elements: float, size: int = element_bytes) -> None:
        out.append(Request(at, key, elements * size))
        refs[key] = 1

    def drop(at: int, key: object) -> None:
        refs[key] -= 1
        if not refs[key]:
            del refs[key]
            out.append(Request(at, key))

    pending: dict[str, object] = {}

    def deliver(at: int, target: str, key: object) -> None:
        """A gradient for `target`'s result arrives; a second one is summed with the first into a new tensor."""
        if target not in pending:
            pending[target] = key
            return
        total = ("sum", target, at)
        new(at, total, ops[index[target]].output_elements())
        drop(at, pending[target])
        drop(at, key)
        pending[target] = total

    weight_grads: list[object] = []
    for at in range(2 * n):
        forward = at < n
        i = at if forward else backward_at(at)
        op = ops[i]
        if forward:
            if op.name in clones:
                new(at, f"{op.name}:clone", op.output_elements())
            own = storage[op.name] == op.name
            for action, elements in forward_requests(op, op.name in flow.inplace, conv_layout.get(op.name), block):
                name = action[1:]
                if name == "indices" and grad[op.name]:
                    if action[0] == "+":
                        new(at, f"{op.name}:indices", elements)
                    continue
                key = op.name if name == "out" else (op.name, name)
                if name == "out" and not own:
                    continue
                out.append(Request(at, key, elements * element_bytes if action[0] == "+" else 0.0))
        elif grad[op.name]:
            incoming = pending.pop(op.name, None)
            if i == n - 1:
                incoming = ("grad", op.name)
                new(at, incoming, op.output_elements())
            if incoming is not None:
                targets = reads[op.name]
                needs = [grad.get(r, False) for r in targets]
                if op.is_free or (op.kind == "elementwise" and getattr(op, "op", "") == "add"):
                    passed = [r for r, need in zip(targets, needs, strict=True) if need]
                    refs[incoming] += len(passed)
                    for r in passed:
                        deliver(at, r, incoming)
                else:
                    sizes = [float(ops[index[r]].output_elements()) if r in index else 0.0 for r in targets]
                    made: dict[str, object] = {}
                    for action, elements in backward_temporaries(op, conv_layout.get(op.name), block, sizes, needs):
                        name = action[1:]
                        key = ("grad", op.name, name)
                        if action[0] == "-":
                            drop(at, key)
                            continue
                        parameter = name.startswith("dw") and name[2:].isdigit()
                        new(at, key, elements, weight_bytes if parameter else element_bytes)
                        made[name] = key
                    weight_grads += [key for name, key in made.items() if name.startswith("dw") and name[2:].isdigit()]
                    for j, r in enumerate(targets):
                        if f"dx{j}" in made:
                            deliver(at, r, made[f"dx{j}"])
                drop(at, incoming)
        out += [Request(at, key) for key in freed_at.get(at, [])]
    end = 2 * n - 1
    for key in sorted(weight_grads, key=lambda k: (index[k[1]], k[2])):  # type: ignore[index]
        drop(end, key)
    for key in list(pending.values()):
        drop(end, key)
    if final != MODEL_INPUT:
        out.append(Request(end, final))  # the logits, which the loss holds until the step returns
    return out


def first_touch_bytes(pairs: list[tuple[str, Op]], flow: Dataflow, train: bool, ctx: CostContext,
                      page_bytes: int = ASSUMED_PAGE_BYTES) -> list[float]:
    """Bytes each executed (pass, op) takes in fresh pages in a steady step on a CPU: the step's requests
    (`inference_requests` or `training_requests`) replayed on glibc's rules
    (`roofline.model.cpu_runtime.allocator.replay`); in
    training an op's backward requests are charged to its first gradient pass."""
    block = max(1, ctx.ceilings.vector_lanes_fp32)
    layouts = {op.name: layout for _, op in pairs if op.kind == "conv2d" and (layout := conv_layout(op, ctx))}
    ops = [op for pass_, op in pairs if pass_ == "forward"]
    if not train:
        return replay(inference_requests(ops, flow, ctx.activation_bytes, block, layouts), len(ops),
                      page_bytes=page_bytes)
    fresh = replay(training_requests(ops, flow, ctx.activation_bytes, ctx.weight_bytes, block, layouts), 2 * len(ops),
                   page_bytes=page_bytes)
    position = {op.name: i for i, op in enumerate(ops)}
    out, charged = [], set()
    for pass_, op in pairs:
        i = position[op.name]
        if pass_ == "forward":
            out.append(fresh[i])
        elif op.name not in charged:
            charged.add(op.name)
            out.append(fresh[2 * len(ops) - 1 - i])
        else:
            out.append(0.0)
    return out

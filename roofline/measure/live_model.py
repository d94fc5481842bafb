"""The real torch module and input a live run times: a zoo model with allocated weights, or the user's
`module:attr` with random inputs of its `--input-shape`. torch is imported inside functions only."""

from __future__ import annotations

from typing import Any

from roofline.errors import RooflineError
from roofline.workload.request import ModelRequest, is_user_module
from roofline.workload.trace import load_module


def required_model(req: ModelRequest) -> str:
    if req.model is None:
        raise RooflineError("validate needs --model NAME or --model module:attr (a single --op has no live run)")
    return req.model


def required_input_shape(req: ModelRequest) -> tuple[int, ...]:
    if not req.input_shape:
        raise RooflineError(f"--model '{req.model}': a module:attr model needs --input-shape, e.g. 1,3,224,224")
    return req.input_shape


def live_model(req: ModelRequest) -> Any:
    """A real (weights allocated and initialised) torch module for the request, on the host."""
    model = required_model(req)
    if not is_user_module(model):
        from roofline.workload.zoo import build_module, get_model

        spec = get_model(model)
        return build_module(spec.name, input_size=req.input_size, num_classes=req.num_classes, seq_len=req.seq_len)
    obj = load_module(model, meta=False)
    if any(p.is_meta for p in obj.parameters()):
        raise RooflineError(f"--model '{req.model}': the module lives on the meta device (no weights); "
                            "give a Module subclass or a factory so validate can build real weights")
    return obj


def _token_range(module: Any) -> int | None:
    """Smallest vocabulary among the module's embeddings: token ids below it are valid for all of them."""
    torch = live_torch()
    sizes = [m.num_embeddings for m in module.modules() if isinstance(m, torch.nn.Embedding)]
    return min(sizes) if sizes else None


def live_input(req: ModelRequest, module: Any, batch: int) -> Any:
    """One batch of host-side inputs: the zoo's example, or random data of --input-shape (token ids when
    the module starts with an embedding, as the tracer's int64 fallback assumes)."""
    torch = live_torch()
    model = req.model or ""
    if not is_user_module(model):
        from roofline.workload.zoo import example_input

        return example_input(model, batch, input_size=req.input_size, seq_len=req.seq_len)
    shape = (batch, *required_input_shape(req)[1:])
    generator = torch.Generator().manual_seed(0)
    vocab = _token_range(module)
    if vocab is not None:
        return torch.randint(0, vocab, shape, generator=generator)
    return torch.randn(shape, generator=generator)


def single_output(module: Any) -> Any:
    """`module` wrapped to return its first output where it returns a tuple, list or dict (Hugging Face
    style: last hidden state, pooled output), its tensor otherwise: `live.make_step`'s loss needs one."""
    torch = live_torch()

    class FirstOutput(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            out = self.inner(x)
            if isinstance(out, dict):
                out = next(iter(out.values()))
            return out[0] if isinstance(out, (tuple, list)) else out

    return FirstOutput(module)


def live_torch() -> Any:
    from roofline.measure.live import require_torch

    return require_torch()

"""Any torch.nn.Module -> Workload, by running its forward on the meta device and recording what it calls.

Meta tensors carry shapes and dtypes but no storage, so a forward pass allocates no weights and does no
arithmetic, yet every aten op still runs its shape logic. Two interposers record the calls:

* a `TorchDispatchMode` sees each aten op after autograd and Python-level decompositions, with its
  tensors' shapes (`F.linear` on a 3-D input arrives as view + mm + view, for instance);
* a `TorchFunctionMode` catches the few functions whose meaning is lost once they are lowered
  (`F.linear` keeps its token dimension, `scaled_dot_product_attention` becomes bmm + softmax on CPU and
  meta, `F.dropout` in eval mode dispatches nothing at all); the aten ops they run are then not recorded
  again.

Forward hooks on every submodule keep a stack of qualified names, so each call is attributed to the
innermost module that made it ('features.0.0'). Parameters are recognised by object identity, and views
of them (the `t()` inside `linear`) inherit that identity, so a matmul against a weight becomes a Linear
whose parameters count. Turning calls into ops is roofline.workload.trace_map's job; this module imports torch only
inside its functions so that importing it stays cheap.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from roofline.errors import MissingDependency, RooflineError, one_line
from roofline.workload.ops.base import Workload
from roofline.workload.trace_map import VIEW_OPS, Call, TensorInfo, map_calls

_FUNCTIONS = {
    "linear": ("linear",),
    "scaled_dot_product_attention": ("scaled_dot_product_attention",),
    "dropout": ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"),
}
"""Recorded name -> torch.nn.functional names recorded whole, before they lower to aten ops."""

_VIEW_OPS = VIEW_OPS | {"clone", "_to_copy"}
"""Aten ops whose outputs are the same parameter data seen differently: a view (or copy) of a weight is
still that weight for deciding whether a matmul is a Linear layer."""


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingDependency("tracing a module:attr model needs torch: pip install 'roofline[torch]'") from None
    return torch


@contextlib.contextmanager
def user_code(ref: str, doing: str) -> Iterator[None]:
    """Run code from the user's module `ref` ('package.module:attr'): its import, its constructor, its forward.
    Whatever escapes it, SystemExit included (a script's `sys.exit` must not end roofline with its own status or
    none), becomes one RooflineError naming the module and what roofline was doing; roofline's own refusals and
    Ctrl-C pass through unchanged."""
    try:
        yield
    except (RooflineError, KeyboardInterrupt):
        raise
    except SystemExit as exc:
        raise RooflineError(f"--model '{ref}': {doing} called sys.exit({exc.code!r})") from None
    except BaseException as exc:
        raise RooflineError(f"--model '{ref}': {doing} raised {type(exc).__name__}: {_one_line(exc)}") from None


def import_reference(ref: str) -> Any:
    """The object 'package.module:attr' names, imported as-is (the current directory importable, as it is
    for `python -m`); the tracer moves it to the meta device, a live run keeps its real weights."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise RooflineError(f"--model '{ref}': expected package.module:attr, e.g. mynet:Net")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    with user_code(ref, f"importing '{module_name}'"):
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise
            raise RooflineError(f"--model '{ref}': module '{module_name}' is not importable ({exc})") from None
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise RooflineError(f"--model '{ref}': '{module_name}' has no attribute '{attr}'")
            obj = getattr(obj, part)
    return obj


def load_module(ref: str, meta: bool = True):
    """The nn.Module named by 'package.module:attr', built on the meta device (no weights) unless `meta` is
    False (a live run needs real weights).

    attr may be an nn.Module subclass (constructed with no arguments), an instance (moved to meta in
    place), or a zero-argument factory returning a module; see `import_reference` for the import.
    """
    torch = _torch()
    obj = import_reference(ref)
    attr = ref.partition(":")[2]
    nn = torch.nn
    if isinstance(obj, nn.Module):
        return obj.to("meta") if meta else obj
    if not callable(obj):
        raise RooflineError(f"--model '{ref}': '{attr}' is of type {type(obj).__name__}, not an nn.Module, "
                            "a Module subclass or a factory returning one")
    with user_code(ref, f"calling '{attr}()' with no arguments"), (
            torch.device("meta") if meta else contextlib.nullcontext()):
        built = obj()
    if not isinstance(built, nn.Module):
        raise RooflineError(f"--model '{ref}': '{attr}()' returned a {type(built).__name__}, not an nn.Module")
    return built.to("meta") if meta else built


def _one_line(exc: BaseException) -> str:
    text = one_line(str(exc))
    return text[:300] + ("..." if len(text) > 300 else "")


def trace_module_workload(ref: str, batch: int, input_shape: tuple[int, ...] | None) -> Workload:
    """The workload of 'package.module:attr' at `batch`; input_shape's leading dimension is the batch."""
    if not input_shape:
        raise RooflineError(f"--model '{ref}': a traced module needs --input-shape, e.g. --input-shape 1,3,224,224")
    if batch < 1:
        raise RooflineError(f"batch size must be a positive integer, got {batch}")
    module = load_module(ref)
    return trace_module(module, (batch, *tuple(input_shape)[1:]), name=ref)


def trace_module(module, example_shape: tuple[int, ...], name: str | None = None) -> Workload:
    """Trace one forward of `module` (moved to the meta device in place) on an input of `example_shape`.

    The input is float32; if the forward rejects floating-point input (an embedding layer first), it is
    retried with int64 token ids. The module is traced in eval mode, so batch norm uses running statistics
    and no running-stat updates are recorded; dropout is still recorded (as an op of its own).
    """
    torch = _torch()
    module = module.to("meta")
    was_training = module.training
    module.eval()
    try:
        calls, dtype = _record_with_fallback(torch, module, tuple(int(d) for d in example_shape), name)
    finally:
        module.train(was_training)
    numel = 1
    for d in example_shape:
        numel *= int(d)
    element_bytes = torch.empty((), dtype=dtype, device="meta").element_size()
    ops, unsupported, dataflow = map_calls(calls)
    workload = Workload(name=name or type(module).__name__, batch=int(example_shape[0]), ops=ops,
                        input_bytes=numel * element_bytes, unsupported=unsupported, dataflow=dataflow,
                        description=f"traced from {type(module).__name__} on input {_shape_text(example_shape)} "
                                    f"({str(dtype).removeprefix('torch.')})")
    module_params = sum(p.numel() for p in module.parameters())
    if workload.params() != module_params:
        workload.description += (f"; the traced ops hold {workload.params()} parameters, the module "
                                 f"{module_params} (shared, unused or unmapped parameters)")
    return workload


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(int(d)) for d in shape)


def _record_with_fallback(torch, module, shape: tuple[int, ...], name: str | None):
    """Calls recorded with a float32 input, or int64 token ids when the model starts with an embedding."""
    errors: list[str] = []
    for dtype in (torch.float32, torch.int64):
        with user_code(name or type(module).__name__, "its forward on the meta device"):
            try:
                return record_calls(module, torch.empty(shape, dtype=dtype, device="meta")), dtype
            except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError) as exc:
                error = f"{type(exc).__name__}: {_one_line(exc)}"
                if error not in errors:
                    errors.append(error)
    raise RooflineError(f"{name or type(module).__name__}: forward on a meta tensor of shape {_shape_text(shape)} "
                        f"failed with float32 and int64 inputs ({'; '.join(errors)}); check --input-shape")


def record_calls(module, example) -> list[Call]:
    """Run module(example) under the recording modes; the calls in execution order."""
    torch = _torch()
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    functions = {getattr(F, fn): recorded for recorded, fns in _FUNCTIONS.items() for fn in fns}
    recorder = _Recorder(torch, module)

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            recorded = functions.get(func)
            if recorded is None or recorder.suppressed:
                return func(*args, **kwargs)
            recorder.suppressed += 1
            try:
                out = func(*args, **kwargs)
            finally:
                recorder.suppressed -= 1
            recorder.record(recorded, args, kwargs, out)
            return out

    class DispatchMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if not recorder.suppressed:
                recorder.record(f"aten.{func.overloadpacket.__name__}", args, kwargs, out)
            elif func.overloadpacket.__name__ in _VIEW_OPS:
                recorder.inherit(args, out)
            return out

    handles = []
    for qualname, sub in module.named_modules():
        handles.append(sub.register_forward_pre_hook(recorder.enter(qualname)))
        handles.append(sub.register_forward_hook(recorder.leave, always_call=True))
    try:
        with torch.no_grad(), FunctionMode(), DispatchMode():
            module(example)
    finally:
        for handle in handles:
            handle.remove()
    return recorder.calls


class _Recorder:
    """State shared by the two modes and the hooks: module stack, parameter identities, recorded calls."""

    def __init__(self, torch, module) -> None:
        self.torch = torch
        self.stack: list[str] = []
        self.calls: list[Call] = []
        self.suppressed = 0
        self.param_of: dict[int, str] = {}
        self._alive: list[Any] = []
        """Every tensor whose id() or storage is numbered here, kept alive so that no id is reused during the
        trace."""
        self._storages: dict[int, int | None] = {}
        """Storage address -> its number (None: a parameter's or a buffer's, not an activation)."""
        for qualname, param in module.named_parameters(remove_duplicate=False):
            self.param_of.setdefault(id(param), qualname)
            self._alive.append(param)
        for tensor in (*module.parameters(), *module.buffers()):
            self._storages[tensor.untyped_storage()._cdata] = None

    def storage(self, tensor: Any) -> int | None:
        """The number of `tensor`'s storage (shared by its views and by in-place results), None for a
        parameter's or a buffer's."""
        address = tensor.untyped_storage()._cdata
        if address not in self._storages:
            self._storages[address] = len(self._storages)
            self._alive.append(tensor)
        return self._storages[address]

    def enter(self, qualname: str):
        """A forward pre-hook pushing `qualname` (hooks must return None, or they replace the input)."""

        def hook(_module, _args) -> None:
            self.stack.append(qualname)

        return hook

    def leave(self, _module, _args, _output) -> None:
        self.stack.pop()

    def info(self, value: Any) -> Any:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            return TensorInfo(tuple(int(d) for d in value.shape), str(value.dtype).removeprefix("torch."),
                              self.param_of.get(id(value)), self.storage(value))
        if isinstance(value, (list, tuple)):
            return type(value)(self.info(v) for v in value)
        if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
            return str(value)
        return value

    def inherit(self, args: tuple, out: Any) -> None:
        """Outputs of a view of a parameter are that parameter (for Linear detection)."""
        source = self.param_of.get(id(args[0])) if args else None
        if source is None:
            return
        for tensor in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(tensor, self.torch.Tensor):
                self.param_of[id(tensor)] = source
                self._alive.append(tensor)

    def record(self, op: str, args: tuple, kwargs: dict, out: Any) -> None:
        if op.removeprefix("aten.") in _VIEW_OPS:
            self.inherit(args, out)
        outputs = out if isinstance(out, (list, tuple)) else (out,)
        self.calls.append(Call(
            op=op,
            module=self.stack[-1] if self.stack else "",
            args=tuple(self.info(a) for a in args),
            kwargs={k: self.info(v) for k, v in kwargs.items()},
            outputs=tuple(self.info(o) for o in outputs if isinstance(o, self.torch.Tensor)),
        ))

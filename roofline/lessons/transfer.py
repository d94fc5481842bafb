"""When do host<->device copies cancel a GPU's advantage? A small fp32 product C = A @ B, n x n.

On the GPU the product costs: copy A and B in (2 n^2 x 4 bytes over the host link), one kernel launch,
2 n^3 FLOPs at the GPU's rate, and C back (n^2 x 4 bytes). On this CPU it costs 2 n^3 FLOPs at the rate
torch reaches here, measured now. The GPU wins only when its arithmetic saves more than the copies cost: the
copies grow as n^2 and the arithmetic as n^3, so there is a crossover size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline.measure.timing import Timer
from roofline.model.ceilings import Ceilings

ELEMENT_BYTES = 4
"""float32."""


@dataclass(frozen=True)
class TransferPoint:
    n: int
    cpu_s: float
    """Measured on this CPU (torch.mm)."""
    copy_in_s: float
    compute_s: float
    copy_out_s: float
    launch_s: float
    gpu_measured_s: float | None = None
    """Copy in + product + copy out, measured end to end, where a GPU is present."""

    @property
    def gpu_model_s(self) -> float:
        return self.copy_in_s + self.launch_s + self.compute_s + self.copy_out_s

    @property
    def gpu_s(self) -> float:
        return self.gpu_measured_s if self.gpu_measured_s is not None else self.gpu_model_s

    @property
    def copy_share(self) -> float:
        """Fraction of the GPU model's time spent copying."""
        return (self.copy_in_s + self.copy_out_s) / self.gpu_model_s


def model(gpu: Ceilings, n: int, cpu_s: float) -> TransferPoint:
    """The GPU side from the profile's numbers: host link bandwidth, launch cost, fp32 peak."""
    link = gpu.host_link_bytes_per_s
    if not link:
        raise ValueError(f"{gpu.device} has no host link bandwidth")
    matrix = n * n * ELEMENT_BYTES
    rate = gpu.matrix_flops_per_s or gpu.vector_flops_per_s
    return TransferPoint(n=n, cpu_s=cpu_s, copy_in_s=2 * matrix / link, compute_s=2.0 * n**3 / rate,
                         copy_out_s=matrix / link, launch_s=gpu.launch_s)


def cpu_time(n: int, budget_s: float = 0.2) -> float:
    """Median time of torch.mm on this CPU for n x n fp32."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    return Timer(lambda: torch.mm(a, b), label=f"cpu mm n={n}", budget_s=budget_s).measure().median


def gpu_time(n: int, budget_s: float = 0.2) -> float:
    """Median end-to-end time on the GPU: pinned copies in, torch.mm, copy out, synchronized."""
    import torch

    a, b = torch.randn(n, n).pin_memory(), torch.randn(n, n).pin_memory()
    out = torch.empty(n, n).pin_memory()

    def call():
        c = torch.mm(a.to("cuda", non_blocking=True), b.to("cuda", non_blocking=True))
        out.copy_(c, non_blocking=True)

    return Timer(call, label=f"gpu mm+copies n={n}", budget_s=budget_s,
                 sync=torch.cuda.synchronize).measure().median


def sweep(gpu: Ceilings, sizes: Sequence[int], measure_gpu: bool) -> list[TransferPoint]:
    points = []
    for n in sizes:
        point = model(gpu, n, cpu_time(n))
        if measure_gpu:
            point = TransferPoint(**{**point.__dict__, "gpu_measured_s": gpu_time(n)})
        points.append(point)
    return points


def crossover(points: Sequence[TransferPoint]) -> int | None:
    """Smallest size from which the GPU (copies included) is faster at every larger size swept."""
    best = None
    for p in reversed(points):
        if p.gpu_s < p.cpu_s:
            best = p.n
        else:
            break
    return best

"""Where a step's input batch comes from, as one name (`--data`): the `StepOptions` fields each choice sets.

A GPU step's time depends on how its input reaches the device, and a benchmark's published figure often hides
the copy that a user's own loop pays: synthetic inputs made on the device (timm's benchmark.py, Lambda's
`--data-backend syntetic`) copy nothing, NVIDIA's DeepLearningExamples loaders copy the next batch on a stream
of their own while the step computes, and a plain `for x, y in loader: x.cuda()` copies from pageable memory
in the step's critical path. The names map onto the three `StepOptions` fields that price the copy
(`include_transfer`, `pinned`, `prefetch`), so scripts and the published record use the same vocabulary.
On a CPU there is no copy: every choice prices the same step.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import RooflineError


@dataclass(frozen=True)
class DataPlacement:
    """One way the input reaches the device, and the `StepOptions` fields it sets."""

    name: str
    include_transfer: bool
    pinned: bool
    prefetch: bool
    label: str
    """A few words for a sentence: 'pinned host memory, non-blocking'."""

    def fields(self) -> dict[str, bool]:
        """The `StepOptions` keyword arguments of this placement."""
        return {"include_transfer": self.include_transfer, "pinned": self.pinned, "prefetch": self.prefetch}


DATA_PLACEMENTS: dict[str, DataPlacement] = {
    p.name: p
    for p in (
        DataPlacement("pageable", True, False, False, "pageable host memory"),
        DataPlacement("pinned", True, True, False, "pinned host memory, non-blocking"),
        DataPlacement("prefetched", True, True, True, "a loader prefetching on its own stream"),
        DataPlacement("device", False, False, False, "already on the GPU"),
    )
}
DEFAULT_DATA = "pageable"


def get_placement(name: str) -> DataPlacement:
    """The placement by name; a one-line error naming the choices otherwise."""
    key = name.strip().lower()
    if key not in DATA_PLACEMENTS:
        raise RooflineError(f"--data '{name}': expected one of {', '.join(DATA_PLACEMENTS)}")
    return DATA_PLACEMENTS[key]


def resolve_placement(data: str | None, pinned: bool) -> DataPlacement:
    """`--data`, or `--pinned` (the older spelling of `--data pinned`), or the default; both given and
    disagreeing is refused rather than one silently winning."""
    if data is None:
        return DATA_PLACEMENTS["pinned" if pinned else DEFAULT_DATA]
    placement = get_placement(data)
    if pinned and placement.name != "pinned":
        raise RooflineError(f"--pinned and --data {placement.name} disagree: --pinned means --data pinned; "
                            "give --data alone")
    return placement


def placement_of(include_transfer: bool, pinned: bool, prefetch: bool) -> str:
    """The name of the placement whose fields these are (a command's `StepOptions` are built from one), for the
    result to say what was priced."""
    fields = {"include_transfer": include_transfer, "pinned": pinned, "prefetch": prefetch}
    return next(name for name, p in DATA_PLACEMENTS.items() if p.fields() == fields)

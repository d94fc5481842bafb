"""Why an op costs what it does, as records: each note is its sentence, tagged with the mechanism that wrote
it."""

from __future__ import annotations

from typing import Literal

NoteKind = Literal["alignment", "quantization", "fallback convolution", "measured rate", "measured convolution",
                   "depthwise", "layout transpose", "kernel rate", "layout conversion", "first touch", "dequantization",
                   "training loop", "operand layout", "unfused", "synchronization", "convolution algorithm"]


class Note(str):
    """One reason an op costs what it does: the sentence with its numbers (a str, so views and JSON print it as
    it is), tagged with the mechanism that wrote it (`kind`). Code that picks notes (the advisor's reasons)
    selects them by kind, never by their wording."""

    kind: NoteKind

    def __new__(cls, kind: NoteKind, text: str) -> Note:
        note = super().__new__(cls, text)
        note.kind = kind
        return note

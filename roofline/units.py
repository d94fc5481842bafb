"""Display formatting: SI base units inside, a prefix chosen only when a number is shown."""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_SMALL = ((1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n"))


def format_si(value: float | None, unit: str, digits: int = 3) -> str:
    """1.0e12, 'B/s' -> '1.00 TB/s'; 2.5e-5, 's' -> '25.0 us'. Binary prefixes are never used."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if value == 0:
        return f"0 {unit}"
    magnitude = abs(value)
    table = _PREFIXES if magnitude >= 1 else _SMALL
    for scale, prefix in table:
        if magnitude >= scale or scale == table[-1][0]:
            scaled = value / scale
            decimals = max(0, digits - 1 - math.floor(math.log10(abs(scaled)))) if scaled else 0
            return f"{scaled:.{decimals}f} {prefix}{unit}"
    return f"{value:g} {unit}"


def format_bytes(value: float) -> str:
    """Capacities in binary units as vendors and OSes print them: 16 GiB, 6 MiB."""
    for scale, prefix in ((2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
        if abs(value) >= scale:
            scaled = value / scale
            return f"{scaled:.0f} {prefix}B" if abs(scaled) >= 100 else f"{scaled:.3g} {prefix}B"
    return f"{value:.0f} B"


def format_sci(value: float) -> str:
    """A number for a formula line, 3 significant digits with a plain exponent: 1.02e12, 2e9, 10.2, 0.25."""
    if float(value).is_integer() and abs(value) < 1e5:
        return str(int(value))
    mantissa, _, exponent = f"{value:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa

"""Shipped CPU profiles: they load, every figure says where it came from, and derived peaks match closed forms
computed here from the vendors' published numbers (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from roofline.hardware import derived as d
from roofline.hardware import find_profile, list_profiles, load_profile
from roofline.hardware.schema import Figure

CPU_ALIASES = ["textbook", "macbook-pro-2017", "xeon-8380", "epyc-9654", "graviton3", "m2"]


def _figures(obj):
    """Every Figure inside a pydantic model, however deeply nested."""
    if isinstance(obj, Figure):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _figures(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _figures(v)
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield from _figures(getattr(obj, name))


@pytest.mark.parametrize("alias", CPU_ALIASES)
def test_profile_loads_and_every_figure_has_provenance(alias):
    profile = find_profile(alias, kind="cpu")
    figures = list(_figures(profile))
    assert len(figures) > 10
    for fig in figures:
        if fig.source is not None:
            assert fig.source.startswith(("https://", "measured: ")), fig
        else:
            assert fig.derived


def test_aliases_are_unique_across_all_profiles():
    seen: dict[str, str] = {}
    for entry in list_profiles():
        for key in {entry.name, *entry.aliases}:
            assert key not in seen, f"{key} names both {seen[key]} and {entry.name}"
            seen[key] = entry.name


def test_textbook_numbers_are_the_chapter_numbers():
    p = find_profile("textbook")
    # d2l.ai hardware chapter: 2e9 Hz x 16 cores x 32 B/cycle = 1.024e12 B/s, against ~100 GB/s of DRAM
    assert d.compute_bytes_per_s(p).value == pytest.approx(2e9 * 16 * 32)
    assert p.memory.bandwidth_bytes_per_s.value == 100e9
    # AVX-512 fp32: 16 cores x 2e9 Hz x 16 lanes x 2 FMA units x 2 FLOP = 2.048e12
    assert d.peak_flops(p)["fp32"] == pytest.approx(2.048e12)


@pytest.mark.parametrize(("alias", "dtype", "expected"), [
    # Xeon 8380: 40 cores x 3.0e9 x 16 fp32 lanes x 2 FMA x 2 = 7.68e12
    ("xeon-8380", "fp32", 40 * 3.0e9 * 16 * 2 * 2),
    # Xeon 8380 VNNI: 40 x 3.0e9 x (64 MACs x 2 ops x 2 ports) = 3.072e13
    ("xeon-8380", "int8", 40 * 3.0e9 * 256),
    # EPYC 9654: 96 cores x 3.55e9 x 8 lanes x 2 pipes (256-bit) x 2 = 1.09e13
    ("epyc-9654", "fp32", 96 * 3.55e9 * 8 * 2 * 2),
    # EPYC 9654 AVX-512 BF16: 96 x 3.55e9 x 64 FLOP/cycle = 2 x fp32
    ("epyc-9654", "bf16", 96 * 3.55e9 * 64),
    # Graviton3: 64 cores x 2.6e9 x 8 lanes (256-bit SVE) x 2 pipes x 2 = 5.32e12
    ("graviton3", "fp32", 64 * 2.6e9 * 8 * 2 * 2),
    # M2 performance cores: 4 x 3.49e9 x 4 lanes x 4 NEON pipes x 2 = 4.47e11
    ("m2", "fp32", 4 * 3.49e9 * 4 * 4 * 2),
    # i7-7920HQ: 4 cores x 4.1e9 x 8 lanes (AVX2) x 2 FMA x 2 = 5.25e11
    ("macbook-pro-2017", "fp32", 4 * 4.1e9 * 8 * 2 * 2),
])
def test_peaks_match_closed_forms(alias, dtype, expected):
    assert d.peak_flops(find_profile(alias))[dtype] == pytest.approx(expected)


@pytest.mark.parametrize(("alias", "bus_bits", "rate"), [
    ("xeon-8380", 8 * 64, 3.2e9),      # 8 channels DDR4-3200 -> 204.8 GB/s
    ("epyc-9654", 12 * 64, 4.8e9),     # 12 channels DDR5-4800 -> 460.8 GB/s
    ("graviton3", 8 * 64, 4.8e9),      # 8 channels DDR5-4800 -> 307.2 GB/s
    ("m2", 128, 6.4e9),                # LPDDR5-6400 x 128 bit -> 102.4 GB/s (Apple says 100)
    ("macbook-pro-2017", 128, 2.133e9),  # LPDDR3-2133 x 2 channels -> 34.1 GB/s (Intel ARK: 34.1)
])
def test_memory_bandwidth_formula_agrees_with_datasheet(alias, bus_bits, rate):
    derived = d.memory_bandwidth(find_profile(alias))
    assert derived.value == pytest.approx(bus_bits / 8 * rate)
    assert not derived.flagged


def test_profiles_load_from_their_paths_too():
    for entry in list_profiles():
        if entry.kind == "cpu":
            assert load_profile(entry.path).kind == "cpu"

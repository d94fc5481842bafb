"""Shipped GPU profiles against the vendors' own datasheet figures, typed in here independently of the YAML.

The table below is the reference: fp32 (CUDA cores), fp16 and bf16 (tensor cores, DENSE, i.e. without 2:4
structured sparsity) and DRAM bandwidth, each with the document it was read from. A profile must match it within
1%, its derived figures (units x clock x lanes x 2, bus width / 8 x data rate) must agree with it within 5% or
say why not, no dense figure may be a sparse one, and every number in every profile must say where it came from.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from roofline.hardware import derived as d
from roofline.hardware import find_profile, list_profiles, load_profile
from roofline.hardware.load import SHIPPED_DIR
from roofline.hardware.schema import DTYPE_BYTES, Figure, GpuProfile

T = 1e12
G = 1e9

# stem: (fp32 FLOP/s, fp16 tensor dense FLOP/s or None, bf16 tensor dense FLOP/s or None, DRAM bytes/s)
DATASHEET: dict[str, tuple[float, float | None, float | None, float]] = {
    # https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-product-literature/TeslaK80-datasheet.pdf
    # board: 8.73 TFLOPS fp32 with GPU Boost, 480 GB/s, two GK210 dies -> per die 4.365 TFLOPS, 240 GB/s
    "k80-gk210": (8.73 * T / 2, None, None, 480 * G / 2),
    # https://ocaholic.ch/modules/news/article.php?storyid=12063 (NVIDIA's launch figure, 7 TFLOPS)
    # https://hothardware.com/reviews/nvidia-geforce-gtx-titan-x-review-efficient-powerful (336.5 GB/s)
    "gtx-titan-x-maxwell": (7.0 * T, None, None, 336.5 * G),
    # https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf (no tensor cores)
    "p100-sxm2-16gb": (10.6 * T, None, None, 732 * G),
    # the same datasheet's PCIe column: 9.3 TFLOPS fp32 (4.7 fp64, 18.7 fp16 half2), 16 GB HBM2 at 732 GB/s, 250 W
    "p100-pcie-16gb": (9.3 * T, None, None, 732 * G),
    # https://images.nvidia.com/content/pdf/tesla/184457-Tesla-P4-Datasheet-NV-Final-Letter-Web.pdf: 5.5 TFLOPS fp32
    # (22 TOPS int8 through dp4a), 8 GB GDDR5 at 192 GB/s, 50/75 W; Pascal GP104, no tensor cores
    "tesla-p4": (5.5 * T, None, None, 192 * G),
    # GTX 1080 Ti: 11.34 TFLOPS fp32 (https://huggingface.co/hardware/gtx-1080-ti); 484 GB/s
    # (https://www.vortez.net/articles_pages/nvidia_gtx_1080_ti_review,2.html); Pascal GP102, no tensor cores
    "gtx-1080-ti": (11.34 * T, None, None, 484 * G),
    # TITAN V: NVIDIA's 13.8 TFLOPS fp32 and 653 GB/s (https://www.tomshardware.com/news/nvidia-titan-rtx-specs-pricing,38184.html);
    # "110 Deep Learning TeraFLOPs" (NVIDIA's product page, quoted by
    # https://medium.com/@u39kun/deep-learning-on-nvidia-titan-v-first-look-1d368d3443fb)
    "titan-v": (13.8 * T, 110 * T, None, 653 * G),
    # TITAN RTX: 16.3 TFLOPS fp32, 672 GB/s (Tom's Hardware table above); fp16 tensor with FP32 accumulate at full rate,
    # 130.5 TFLOPS, unlike the 2080 Ti (https://www.tomshardware.com/reviews/nvidia-titan-rtx-deep-learning-gaming-tensor,5971-3.html)
    "titan-rtx": (16.3 * T, 130.5 * T, None, 672 * G),
    # https://www.nvidia.com/content/dam/en-zz/Solutions/data-center/products/a30-gpu/pdf/a30-datasheet.pdf
    # 10.3 TFLOPS fp32; "165 | 330*" TFLOPS fp16/bf16: dense 165; 24 GB HBM2 at 933 GB/s
    "a30": (10.3 * T, 165 * T, 165 * T, 933 * G),
    # https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
    # one "V100 PCIe" column for the 32 GB and 16 GB boards
    "v100-pcie-32gb": (14 * T, 112 * T, None, 900 * G),
    # https://images.nvidia.com/content/technologies/volta/pdf/tesla-volta-v100-datasheet-letter-fnl-web.pdf
    "v100-sxm2-16gb": (15.7 * T, 125 * T, None, 900 * G),
    # https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
    "v100-sxm2-32gb": (15.7 * T, 125 * T, None, 900 * G),
    "v100-pcie-16gb": (14 * T, 112 * T, None, 900 * G),
    # https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf
    "t4": (8.1 * T, 65 * T, None, 320 * G),
    # https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf
    # "125 | 250*" TFLOPS: dense 125, * = with sparsity
    "a10": (31.2 * T, 125 * T, 125 * T, 600 * G),
    # A10G (AWS G5), NVIDIA's datasheet hosted by AWS:
    # https://d1.awsstatic.com/product-marketing/ec2/NVIDIA_AWS_A10G_DataSheet_FINAL_02_17_2022.pdf
    # 35 TF fp32, fp16/bf16 tensor "70 | 140*": dense 70 (not the A10's 125), 600 GB/s
    "a10g": (35 * T, 70 * T, 70 * T, 600 * G),
    # https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413: 91.6 TFLOPS fp32, 864 GB/s, fp16/bf16
    # "362.05 | 733*": dense = 733 / 2 (the printed 362.05 is 142 SM x 512 x 2 at the L40's 2.49 GHz)
    "l40s": (91.6 * T, 733 * T / 2, 733 * T / 2, 864 * G),
    # https://images.nvidia.com/content/Solutions/data-center/vgpu-L40-datasheet.pdf: 90.5 TFLOPS fp32, 864 GB/s,
    # fp16/bf16 "181.05 | 362.1*": dense 181.05 (half the L40S's per-clock rate)
    "l40": (90.5 * T, 181.05 * T, 181.05 * T, 864 * G),
    # https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf: 37.4 TFLOPS fp32,
    # 696 GB/s, fp16/bf16 "149.7 | 299.4*": dense 149.7
    "a40": (37.4 * T, 149.7 * T, 149.7 * T, 696 * G),
    # https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf
    # "312 | 624*" TFLOPS fp16/bf16: dense 312; 40 GB HBM2 at 1555 GB/s
    "a100-sxm4-40gb": (19.5 * T, 312 * T, 312 * T, 1555 * G),
    # https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
    "a100-sxm4-80gb": (19.5 * T, 312 * T, 312 * T, 2039 * G),
    # same GA100 and peaks as the SXM4 40 GB (datasheet above); PCIe board at 250 W, 1555 GB/s:
    # https://www.thundercompute.com/blog/nvidia-a100-specs-full-guide
    "a100-pcie-40gb": (19.5 * T, 312 * T, 312 * T, 1555 * G),
    # the A100 datasheet above, "A100 80GB PCIe" column: 19.5 TFLOPS fp32, fp16/bf16 "312 | 624*": dense 312;
    # 80 GB HBM2e at 1,935 GB/s, 300 W
    "a100-pcie-80gb": (19.5 * T, 312 * T, 312 * T, 1935 * G),
    # RTX A6000: 38.71 TFLOPS fp32, 768 GB/s (https://sysrqmts.com/es/gpus/compare/nvidia-rtx-a6000-vs-nvidia-tesla-p40);
    # fp16/bf16 tensor with fp32 accumulate 154.8 dense, 309.7 sparse (https://llmperf.net/categories/gpu/Nvidia-A6000-GPUs)
    "rtx-a6000": (38.71 * T, 154.8 * T, 154.8 * T, 768 * G),
    # RTX 2080 Ti: 13.45 TFLOPS fp32, 616 GB/s (https://gpu.spicedreamphone.com/ru/gpu/nvidia/geforce-rtx-2080-ti);
    # fp16 tensor with fp32 accumulate 56.9 TFLOPS at the Founders Edition's 1635 MHz (Turing whitepaper, as cited
    # by https://github.com/nlzy/turing-unlock/wiki), 53.8 at the reference 1545 MHz; no bf16 on Turing
    "rtx-2080-ti": (13.45 * T, 53.8 * T, None, 616 * G),
    # https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
    # RTX 3090 fp16/bf16 tensor with fp32 accumulate "71/142": dense 71
    "rtx-3090": (35.6 * T, 71 * T, 71 * T, 936 * G),
    # https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
    # RTX 3080 (10 GB) fp16/bf16 tensor with fp32 accumulate "59.5/119": dense 59.5; 29.8 fp32, 760 GB/s
    "rtx-3080": (29.8 * T, 59.5 * T, 59.5 * T, 760 * G),
    # https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf (appendix)
    # RTX 4080 16 GB fp16/bf16 tensor with fp32 accumulate "97.5/194.9": dense 97.5; 48.7 fp32, 716.8 GB/s
    "rtx-4080": (48.7 * T, 97.5 * T, 97.5 * T, 716.8 * G),
    # RTX 6000 Ada: 91.1 TFLOPS fp32, 960 GB/s, tensor 1457 TFLOPS = fp8 with sparsity
    # (https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/rtx-6000/proviz-print-rtx6000-datasheet-web-2504660.pdf);
    # fp16/bf16 tensor with fp32 accumulate (full rate on the professional board) 364.2 dense / 728.5 sparse (Ada
    # whitepaper above) = fp8 dense 1457 / 2 / 2
    "rtx-6000-ada": (91.1 * T, 364.2 * T, 364.2 * T, 960 * G),
    # https://www.nvidia.com/content/dam/en-zz/Solutions/products/workstations/nvidia-rtx-a5000-datasheet.pdf quotes
    # only sparse: "Tensor performance 222.2 TFLOPS" (fp16, fp32 accumulate at full rate) -> dense 222.2 / 2;
    # 27.8 TFLOPS fp32, 768 GB/s
    "rtx-a5000": (27.8 * T, 222.2 * T / 2, 222.2 * T / 2, 768 * G),
    # https://www.nvidia.com/en-us/data-center/l4/ quotes only sparse: fp16/bf16 242* TFLOPS -> dense 242 / 2
    "l4": (30.3 * T, 242 * T / 2, 242 * T / 2, 300 * G),
    # https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf
    # RTX 4090 fp16/bf16 tensor with fp32 accumulate "165.2/330.4": dense 165.2
    "rtx-4090": (82.6 * T, 165.2 * T, 165.2 * T, 1008 * G),
    # https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper ("989.4/1978.9" fp16/bf16)
    # https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (3.35 TB/s; PCIe 2 TB/s)
    "h100-sxm5-80gb": (66.9 * T, 989.4 * T, 989.4 * T, 3.35e12),
    "h100-pcie-80gb": (51.2 * T, 756 * T, 756 * T, 2.0e12),
    # https://www.nvidia.com/en-us/data-center/h200/ quotes only sparse: fp16/bf16 1979* TFLOPS -> dense / 2
    "h200-sxm-141gb": (67 * T, 1979 * T / 2, 1979 * T / 2, 4.8e12),
    # https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703 ("Individual Blackwell GPU Specifications", HGX
    # B200 column): 75 TFLOPS fp32, fp16/bf16 4.5 PFLOPS with sparsity -> dense / 2, 180 GB HBM3e at 7.7 TB/s
    "b200": (75 * T, 4500 * T / 2, 4500 * T / 2, 7.7e12),
    # https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf
    # RTX 5090 104.8 TFLOPS fp32; fp16/bf16 tensor with fp32 accumulate "209.5/419": dense 209.5; 1792 GB/s
    "rtx-5090": (104.8 * T, 209.5 * T, 209.5 * T, 1792 * G),
    # https://www.nvidia.com/en-us/data-center/h100/ (H100 NVL column, per GPU): 60 TFLOPS fp32, fp16/bf16 1,671*
    # TFLOPS with sparsity -> dense / 2, 94 GB HBM3 at 3.9 TB/s
    "h100-nvl-94gb": (60 * T, 1671 * T / 2, 1671 * T / 2, 3.9e12),
    # The six boards below: no NVIDIA whitepaper or product page was readable here, so their figures are transcribed
    # from the spec pages each profile cites, and the tensor rates are the SM count x the sibling SM's per-clock rate x
    # the boost clock (each profile's `derived:`), checked against NVIDIA's launch figures where one was quoted.
    # RTX 3060 12 GB: 28 SM, 1777 MHz, 12.74 TFLOPS fp32, 192-bit x 15 Gbps = 360 GB/s; fp16 tensor with fp32
    # accumulate 28 x 256 x 2 x 1.777e9 = 25.47 (NVIDIA's launch "101 tensor-TFLOPS" = 4 x: sparse, fp16 accumulate)
    "rtx-3060": (12.74 * T, 25.47 * T, 25.47 * T, 360 * G),
    # RTX 3070: 46 SM, 1725 MHz, 20.31 TFLOPS fp32, 256-bit x 14 Gbps = 448 GB/s; 46 x 256 x 2 x 1.725e9 = 40.63
    "rtx-3070": (20.31 * T, 40.63 * T, 40.63 * T, 448 * G),
    # RTX A4000: NVIDIA's datasheet table (19.2 TFLOPS fp32, 153.4 TFLOPS tensor with sparsity, full rate on the
    # professional board -> dense / 2), 448 GB/s
    "rtx-a4000": (19.2 * T, 153.4 * T / 2, 153.4 * T / 2, 448 * G),
    # RTX 2080: 46 SM, 1710 MHz, 10.07 TFLOPS fp32, 448 GB/s; 46 x 256 x 2 x 1.71e9 = 40.27; no bf16 on Turing
    "rtx-2080": (10.07 * T, 40.27 * T, None, 448 * G),
    # RTX 4070 Ti: 60 SM, 2610 MHz, 40.09 TFLOPS fp32, 192-bit x 21 Gbps = 504 GB/s; 60 x 256 x 2 x 2.61e9 = 80.18
    "rtx-4070-ti": (40.09 * T, 80.18 * T, 80.18 * T, 504 * G),
    # RTX 4060 Ti 16 GB: 34 SM, 2535 MHz, 22.06 TFLOPS fp32, 128-bit x 18 Gbps = 288 GB/s; 34 x 256 x 2 x 2.535e9 = 44.1
    "rtx-4060-ti-16gb": (22.06 * T, 44.13 * T, 44.13 * T, 288 * G),
}

# (alias, file stem) as the project specifies them; loader matching ignores case.
ALIASES = [
    ("v100", "v100-sxm2-16gb"), ("h100", "h100-sxm5-80gb"), ("a100", "a100-sxm4-80gb"), ("k80", "k80-gk210"),
    ("p100", "p100-sxm2-16gb"), ("t4", "t4"), ("a10", "a10"), ("l4", "l4"), ("h200", "h200-sxm-141gb"),
    ("a10g", "a10g"), ("l40s", "l40s"), ("l40", "l40"), ("a40", "a40"),
    ("1080ti", "gtx-1080-ti"), ("gtx1080ti", "gtx-1080-ti"), ("titanv", "titan-v"), ("titan-v", "titan-v"),
    ("titanrtx", "titan-rtx"), ("titan-rtx", "titan-rtx"), ("a30", "a30"), ("v100-pcie-32gb", "v100-pcie-32gb"),
    ("rtx3090", "rtx-3090"), ("3090", "rtx-3090"), ("rtx4090", "rtx-4090"), ("4090", "rtx-4090"),
    ("rtx3080", "rtx-3080"), ("4080", "rtx-4080"), ("rtx6000-ada", "rtx-6000-ada"), ("a5000", "rtx-a5000"),
    ("titanx", "gtx-titan-x-maxwell"), ("titan-x-maxwell", "gtx-titan-x-maxwell"),
    ("a100-40gb", "a100-sxm4-40gb"), ("h100-pcie", "h100-pcie-80gb"), ("v100-32gb", "v100-sxm2-32gb"),
    ("v100-pcie", "v100-pcie-16gb"),
    ("a100-pcie", "a100-pcie-40gb"), ("a6000", "rtx-a6000"), ("2080ti", "rtx-2080-ti"),
    ("RTX4090", "rtx-4090"), ("H100", "h100-sxm5-80gb"),
    ("B200", "b200"), ("hgx-b200", "b200"), ("rtx5090", "rtx-5090"), ("5090", "rtx-5090"),
    ("h100-nvl", "h100-nvl-94gb"),
    ("3060", "rtx-3060"), ("rtx3070", "rtx-3070"), ("a4000", "rtx-a4000"), ("rtx2080", "rtx-2080"),
    ("4070ti", "rtx-4070-ti"), ("rtx-4060-ti-16gb", "rtx-4060-ti-16gb"),
    ("a100-pcie-80gb", "a100-pcie-80gb"), ("a100-80gb-pcie", "a100-pcie-80gb"), ("A100-PCIE-80GB", "a100-pcie-80gb"),
    ("p100-pcie", "p100-pcie-16gb"), ("p100-pcie-16gb", "p100-pcie-16gb"), ("tesla-p100-pcie", "p100-pcie-16gb"),
    ("p4", "tesla-p4"), ("tesla-p4", "tesla-p4"), ("P4", "tesla-p4"),
]


def _shipped_gpus() -> dict[str, GpuProfile]:
    """File stem -> profile for the GPU profiles shipped in the repository (not user or calibrated ones)."""
    gpu_dir = SHIPPED_DIR / "gpu"
    return {path.stem: load_profile(path) for path in sorted(gpu_dir.glob("*.yaml"))}


SHIPPED = _shipped_gpus()


def _figures(obj, where: str = ""):
    """(path, Figure) for every Figure inside a pydantic model, however deeply nested."""
    if isinstance(obj, Figure):
        yield where, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _figures(v, f"{where}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            yield from _figures(v, f"{where}[{i}]")
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield from _figures(getattr(obj, name), f"{where}.{name}")


def _close(actual: float, expected: float, rel: float) -> bool:
    return abs(actual - expected) <= rel * expected


def test_every_shipped_gpu_profile_is_in_the_datasheet_table():
    assert set(SHIPPED) == set(DATASHEET)
    assert all(p.kind == "gpu" for p in SHIPPED.values())


@pytest.mark.parametrize("stem", sorted(DATASHEET))
def test_profile_matches_vendor_datasheet_within_1_percent(stem):
    p = SHIPPED[stem]
    fp32, fp16, bf16, bandwidth = DATASHEET[stem]
    assert p.peak_flops_per_s["fp32"].value == pytest.approx(fp32, rel=0.01)
    assert p.memory.bandwidth_bytes_per_s.value == pytest.approx(bandwidth, rel=0.01)
    for dtype, expected in (("fp16", fp16), ("bf16", bf16)):
        tc = p.tensor_cores.get(dtype)
        if expected is None:
            assert tc is None, f"{stem} has no {dtype} tensor cores"
        else:
            assert tc is not None and tc.dense_flops_per_s.value == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize("stem", sorted(DATASHEET))
def test_derived_peak_and_bandwidth_agree_with_datasheet_or_say_why(stem):
    p = SHIPPED[stem]
    fp32, _, _, bandwidth = DATASHEET[stem]
    vector = d.vector_peak(p, "fp32")
    mem = d.memory_bandwidth(p)
    for derived, datasheet, figure in ((vector, fp32, p.peak_flops_per_s["fp32"]),
                                       (mem, bandwidth, p.memory.bandwidth_bytes_per_s)):
        assert _close(derived.value, datasheet, 0.05) or figure.note, (
            f"{stem}: {derived.name} {derived.with_numbers()} = {derived.value:.4g} is more than 5% from the "
            f"datasheet's {datasheet:.4g} and the figure carries no note explaining why")


def test_titan_x_gap_is_flagged_and_explained():
    # 24 SM x 1.075e9 Hz x 128 lanes x 2 = 6.60e12 against NVIDIA's 7 TFLOPS: 5.7% low
    p = find_profile("titanx")
    vector = d.vector_peak(p, "fp32")
    assert vector.value == pytest.approx(24 * 1.075e9 * 128 * 2)
    assert vector.flagged and "boost" in p.peak_flops_per_s["fp32"].note


@pytest.mark.parametrize(("alias", "expected"), [
    ("k80", 13 * 0.875e9 * 192 * 2),        # 4.37e12 per GK210 die
    ("p100", 56 * 1.48e9 * 64 * 2),         # 10.6e12
    ("p100-pcie", 56 * 1.303e9 * 64 * 2),   # 9.34e12 (NVIDIA: 9.3)
    ("p4", 20 * 1.063e9 * 128 * 2),         # 5.44e12 (NVIDIA: 5.5)
    ("v100", 80 * 1.53e9 * 64 * 2),         # 15.7e12
    ("v100-pcie", 80 * 1.38e9 * 64 * 2),    # 14.1e12
    ("t4", 40 * 1.59e9 * 64 * 2),           # 8.14e12
    ("a100", 108 * 1.41e9 * 64 * 2),        # 19.5e12
    ("a100-pcie-80gb", 108 * 1.41e9 * 64 * 2),  # 19.5e12
    ("3090", 82 * 1.695e9 * 128 * 2),       # 35.6e12
    ("4090", 128 * 2.52e9 * 128 * 2),       # 82.6e12
    ("h100", 132 * 1.98e9 * 128 * 2),       # 66.9e12
])
def test_fp32_vector_peak_is_the_closed_form(alias, expected):
    assert d.vector_peak(find_profile(alias), "fp32").value == pytest.approx(expected)


@pytest.mark.parametrize(("alias", "bus_bits", "rate"), [
    ("k80", 384, 5.0e9),        # 240 GB/s per die
    ("v100", 4096, 1.752e9),    # 897 GB/s (NVIDIA: 900)
    ("t4", 256, 10e9),          # 320 GB/s
    ("a100-40gb", 5120, 2.43e9),  # 1555 GB/s
    ("a100-pcie-80gb", 5120, 3.024e9),  # 1935 GB/s
    ("p100-pcie", 4096, 1.43e9),  # 732 GB/s
    ("p4", 256, 6.008e9),       # 192 GB/s
    ("3090", 384, 19.5e9),      # 936 GB/s
    ("4090", 384, 21e9),        # 1008 GB/s
])
def test_memory_bandwidth_is_the_closed_form(alias, bus_bits, rate):
    assert d.memory_bandwidth(find_profile(alias)).value == pytest.approx(bus_bits / 8 * rate)


@pytest.mark.parametrize("stem", sorted(DATASHEET))
def test_no_dense_peak_is_a_sparse_figure(stem):
    for dtype, tc in SHIPPED[stem].tensor_cores.items():
        if tc.sparse_flops_per_s is not None:
            dense, sparse = tc.dense_flops_per_s.value, tc.sparse_flops_per_s.value
            assert dense != sparse, f"{stem} {dtype}: dense equals sparse"
            # 2:4 structured sparsity skips half the multiplies: the sparse figure is twice the dense one
            assert sparse == pytest.approx(2 * dense, rel=0.01), f"{stem} {dtype}"


@pytest.mark.parametrize("stem", sorted(DATASHEET))
def test_tensor_alignment_is_16_bytes(stem):
    # NVIDIA DL performance guide, Tensor Core requirements: fp16 multiples of 8, tf32 of 4, int8 of 16, fp64 of 2
    # https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html
    for dtype, tc in SHIPPED[stem].tensor_cores.items():
        assert tc.alignment_elements * DTYPE_BYTES[dtype] == 16, f"{stem} {dtype}"


def test_aliases_are_unique_across_all_profiles():
    seen: dict[str, str] = {}
    for entry in list_profiles():
        for key in {entry.name, *entry.aliases}:
            assert key not in seen, f"{key} names both {seen[key]} and {entry.name}"
            seen[key] = entry.name


@pytest.mark.parametrize(("alias", "stem"), ALIASES)
def test_alias_resolves_to_its_profile(alias, stem):
    assert find_profile(alias, kind="gpu").name == SHIPPED[stem].name


@pytest.mark.parametrize("stem", sorted(DATASHEET))
def test_every_figure_has_provenance(stem):
    figures = list(_figures(SHIPPED[stem]))
    assert len(figures) > 15
    for where, fig in figures:
        if fig.source is not None:
            assert fig.source.startswith(("https://", "http://", "measured")), f"{stem}{where}: {fig.source}"
        else:
            assert fig.derived and fig.derived.strip(), f"{stem}{where}"


@pytest.mark.parametrize("stem", sorted(DATASHEET))
def test_required_gpu_fields_are_present(stem):
    p = SHIPPED[stem]
    c = p.compute
    assert c.fp64_lanes_per_sm is not None and p.tdp_watts is not None
    assert {"L1", "L2"} <= {cache.level for cache in p.caches}
    l2 = next(cache for cache in p.caches if cache.level == "L2")
    assert l2.shared_by == c.sm_count.value
    # fp16 on CUDA cores from GP100 on; bf16 from Ampere on; neither on Kepler/Maxwell
    assert ("fp16" in c.vector_dtypes) == (stem not in ("k80-gk210", "gtx-titan-x-maxwell"))
    assert ("bf16" in c.vector_dtypes) == (p.architecture.split()[0] in ("Ampere", "Ada", "Hopper", "Blackwell"))


# stem: (published sustained HBM bytes/s, {dtype: published sustained GEMM FLOP/s}), typed in from the sources
# the profiles cite: BabelStream Triad (V100-PCIE-16GB 846.5 GB/s; Perlmutter A100-40GB 1376.7; Azure ND A100 v4
# 1.70 TB/s, ND H100 v5 2.97, ND H200 v5 4.15), cuBLASLt / torch.matmul of large aligned products
PUBLISHED = {
    "v100-sxm2-16gb": (846.5 * G, {"fp16": 97.36 * T}),
    "v100-sxm2-32gb": (846.5 * G, {"fp16": 97.36 * T}),
    "v100-pcie-16gb": (846.5 * G, {}),
    "a100-sxm4-40gb": (1376.7 * G, {}),
    "a100-sxm4-80gb": (1.70e12, {"fp16": 256.5 * T, "bf16": 271.2 * T}),
    "h100-sxm5-80gb": (2.97e12, {"bf16": 725.7 * T, "fp8": 1377.3 * T}),
    "h200-sxm-141gb": (4.15e12, {"fp8": 1366.3 * T}),
}


@pytest.mark.parametrize("stem", sorted(PUBLISHED))
def test_published_measurements_replace_the_datasheet(stem):
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    profile = load_profile(SHIPPED_DIR / "gpu" / f"{stem}.yaml")
    hbm, gemm = PUBLISHED[stem]
    sustained = profile.memory.sustained_bandwidth_bytes_per_s
    assert sustained is not None and sustained.value == pytest.approx(hbm)
    assert sustained.source.startswith("measured: ") and "https://" in sustained.source
    # a measurement cannot beat the pins, and a streaming kernel reaches most of them (84-94% here)
    assert 0.8 < sustained.value / profile.memory.bandwidth_bytes_per_s.value < 1.0
    for dtype, tc in profile.tensor_cores.items():
        figure = tc.sustained_flops_per_s
        assert (figure.value if figure else None) == (pytest.approx(gemm[dtype]) if dtype in gemm else None)
        if figure:
            assert figure.source.startswith("measured: ") and "https://" in figure.source
            assert 0.6 < figure.value / tc.dense_flops_per_s.value < 1.0
    for dtype in ("fp16", "bf16", "fp8"):
        if dtype not in profile.tensor_cores:
            continue
        c = ceilings_for(profile, get_precision(dtype), runtime=None)
        assert c.dram.bandwidth_bytes_per_s == pytest.approx(hbm)
        assert c.provenance["dram_bandwidth"] == "published measurement"
        # a dtype without its own measurement takes one of another dtype with the same dense peak (fp16 and
        # bf16 share the tensor-core datapath: the same chip, the same rate), else the datasheet
        dense = profile.tensor_cores[dtype].dense_flops_per_s.value
        same_peak = [v for d, v in gemm.items() if profile.tensor_cores[d].dense_flops_per_s.value == dense]
        expected = gemm.get(dtype, same_peak[0] if same_peak else dense)
        assert c.matrix_flops_per_s == pytest.approx(expected)


def test_a_calibration_of_this_gpu_outranks_the_published_measurements():
    from roofline.hardware.schema import Measured
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    a100 = load_profile(SHIPPED_DIR / "gpu" / "a100-sxm4-80gb.yaml")
    measured = Measured(peak_flops={"fp32": 19e12, "fp16": 240e12}, memory_bandwidth=1.6e12,
                        environment={"gpu_model": "A100"})
    c = ceilings_for(a100.model_copy(update={"measured": measured}), get_precision("fp16"))
    assert (c.matrix_flops_per_s, c.dram.bandwidth_bytes_per_s) == (240e12, 1.6e12)
    assert c.provenance["matrix_flops_per_s"] == c.provenance["dram_bandwidth"] == "measured"


# stem: {dtype: torch.mm FLOP/s at 8192^3, or the best size where the source gives no sizes}, typed in from
# zzc0721/torch-performance-test-data (issues 140, 108, 95, 42, 46, 78, 9 and database.md at 9d82827): power-limited
# boards fall furthest below the datasheet (H100 PCIe fp16 at 58% of 756, T4 at 65%, Tesla P4 at 73%), and
# GA102/AD102 CUDA cores below their doubled fp32 peak (3090 at 70%, 4090 at 65%)
PUBLISHED_GEMM = {
    "v100-sxm2-16gb": {"fp32": 14.38 * T, "fp16": 97.36 * T},
    "v100-sxm2-32gb": {"fp32": 14.38 * T, "fp16": 97.36 * T},
    "a100-sxm4-80gb": {"fp32": 19.18 * T},
    "a100-pcie-40gb": {"fp32": 17.56 * T, "tf32": 97.32 * T, "fp16": 197.51 * T, "bf16": 215.26 * T},
    "h100-pcie-80gb": {"fp32": 36.95 * T, "tf32": 240.43 * T, "fp16": 437.07 * T, "bf16": 492.84 * T},
    "t4": {"fp32": 4.35 * T, "fp16": 41.93 * T},
    "rtx-a6000": {"fp32": 23.92 * T, "fp16": 120.49 * T, "bf16": 123.34 * T},
    "rtx-3090": {"fp32": 24.79 * T, "fp16": 75.64 * T, "bf16": 76.34 * T},
    "rtx-4090": {"fp32": 53.41 * T, "fp16": 166.4 * T, "bf16": 166.6 * T},
    "a10g": {"fp32": 23.23 * T, "tf32": 34.13 * T, "fp16": 65.67 * T, "bf16": 66.59 * T},
    "l40s": {"fp32": 46.88 * T, "fp16": 264.02 * T, "bf16": 269.15 * T},
    "a40": {"fp32": 23.73 * T, "tf32": 59.52 * T, "fp16": 108.47 * T, "bf16": 110.64 * T},
    # the GTX 1080 Ti's fp16 torch.mm (8.09e12) runs at about its fp32 rate, far above GP102's 1/64-rate fp16
    # units (cuBLAS computes its fp16 products in fp32), so it is outside the peak bounds checked below
    "gtx-1080-ti": {"fp32": 9.24 * T},
    # P100 PCIe: database.md line 67, 8.63 (issue 174 gives the same at 8192^3); its fp16 (7.72 at 8192^3, issue 174)
    # is the fp32 lanes' rate too, 41% of the 18.7 half2 peak: checked below, not against the peak
    "p100-pcie-16gb": {"fp32": 8.63 * T},
    # P100 SXM2 (issue 180), 8192^3: 9.50; its fp16 (7.29) is the fp32 lanes' rate like the PCIe board's
    "p100-sxm2-16gb": {"fp32": 9.50 * T},
    # Tesla P4 at stock clocks (issue 9), 8192^3: 4.01 (database.md line 25's 4.96 is the same issue's overclocked run);
    # its fp16 (3.47) is outside the peak bounds like the GTX 1080 Ti's
    "tesla-p4": {"fp32": 4.01 * T},
    "rtx-3080": {"fp32": 20.97 * T, "tf32": 32.03 * T, "fp16": 64.10 * T, "bf16": 64.68 * T},
    "rtx-5090": {"fp32": 65.92 * T, "fp16": 229.52 * T, "bf16": 238.04 * T},
    "b200": {"fp32": 66.24 * T, "fp16": 1627.64 * T, "bf16": 1696.03 * T},
    # L4 (issue 120), 8192^3: a 72 W card, the furthest below its datasheet (fp32 at 35% of 30.3)
    "l4": {"fp32": 10.66 * T, "tf32": 25.69 * T, "fp16": 53.80 * T, "bf16": 59.40 * T},
}


@pytest.mark.parametrize("stem", sorted(PUBLISHED_GEMM))
def test_published_gemm_rates_price_the_products(stem):
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    profile = load_profile(SHIPPED_DIR / "gpu" / f"{stem}.yaml")
    for dtype, rate in PUBLISHED_GEMM[stem].items():
        tensor = dtype in profile.tensor_cores
        figure = profile.tensor_cores[dtype].sustained_flops_per_s if tensor else profile.sustained_flops_per_s[dtype]
        assert figure is not None and figure.value == pytest.approx(rate)
        assert figure.source.startswith("measured: ") and "https://" in figure.source
        c = ceilings_for(profile, get_precision(dtype), runtime=None)
        applied = c.matrix_flops_per_s if tensor else c.vector_flops_per_s
        assert applied == pytest.approx(rate)
        # a large product reaches a third of the datasheet's peak or more (the 72 W L4 the least: fp32 at 0.35, the
        # others above 0.5) and not much more: the peak is quoted at the rated boost clock, which GeForce boards
        # exceed under GPU Boost (RTX 3090: 75.64 of 71.0 rated, 1.065x; RTX 5090 bf16: 238.04 of 209.5, 1.136x)
        peak = profile.tensor_cores[dtype].dense_flops_per_s.value if tensor else profile.peak_flops_per_s[dtype].value
        assert (0.33 if stem == "l4" else 0.5) < rate / peak < 1.2


# stem: (torch.mm fp16 FLOP/s, torch.mm fp32 FLOP/s), both at 8192^3, on Pascal boards without tensor cores (issues 60,
# 174, 180 and 9; the P100 PCIe's fp32 from database.md line 67, which issue 174 matches): cuBLAS computes PyTorch's
# half products in float on the fp32 lanes, so they run below the fp32 rate (77-93% of it) whatever the half units do
# (GP100's half2 at twice fp32, GP102's and GP104's at 1/64)
PASCAL_HALF_GEMM = {
    "gtx-1080-ti": (8.09 * T, 9.24 * T),
    "p100-pcie-16gb": (7.72 * T, 8.63 * T),
    "p100-sxm2-16gb": (7.29 * T, 9.50 * T),
    "tesla-p4": (3.47 * T, 4.01 * T),
}


@pytest.mark.parametrize("stem", sorted(PASCAL_HALF_GEMM))
def test_pascal_half_products_are_priced_at_their_measured_fp32_lane_rate(stem):
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    profile = SHIPPED[stem]
    fp16, fp32 = PASCAL_HALF_GEMM[stem]
    assert not profile.tensor_cores
    figure = profile.sustained_flops_per_s["fp16"]
    assert figure.value == pytest.approx(fp16) and profile.sustained_flops_per_s["fp32"].value == pytest.approx(fp32)
    assert figure.source.startswith("measured: ") and "https://" in figure.source
    assert 0.75 < fp16 / fp32 < 1.0
    c = ceilings_for(profile, get_precision("fp16"), runtime=None)
    assert c.vector_flops_per_s == pytest.approx(fp16)
    assert c.provenance["vector_flops_per_s"] == "published measurement"


@pytest.mark.parametrize(("stem", "sibling", "expected"), [
    # RTX A5000: GA102 like the RTX 3090, whose sgemm sustains 24.79 of its rated 35.6 TFLOP/s
    ("rtx-a5000", "rtx-3090", 27.8e12 * 24.79 / 35.6),
    # L40: AD102 like the L40S, 46.88 of 91.6
    ("l40", "l40s", 90.5e12 * 46.88 / 91.6),
])
def test_a_board_without_a_measurement_takes_its_siblings_measured_share(stem, sibling, expected):
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    c = ceilings_for(SHIPPED[stem], get_precision("fp32"))
    assert c.vector_flops_per_s == pytest.approx(expected, rel=1e-3)
    assert c.provenance["vector_flops_per_s"] == "derived from a sibling board's measurement"
    assert sibling in SHIPPED[stem].sustained_flops_per_s["fp32"].derived


def test_h100_nvl_memory_at_the_h100_sxm5s_measured_share():
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    # BabelStream Triad 2.97 TB/s of the SXM5's 3.35 datasheet, applied to the NVL's 3.9
    c = ceilings_for(SHIPPED["h100-nvl-94gb"], get_precision("bf16"))
    assert c.levels[-1].bandwidth_bytes_per_s == pytest.approx(3.9e12 * 2.97 / 3.35, rel=1e-3)

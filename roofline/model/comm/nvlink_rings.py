"""How many NVLinks' worth of rings NCCL 2 lays over the GPUs of a direct NVLink mesh (a DGX-1) that take part.

A GPU of a DGX-1 does not drive all of its NVLinks in every job: a ring only uses the links between GPUs
that are in it. NCCL 2 runs several rings at once, 'concurrent data movement channels ... to maximize the link
utilization of the physical topology (e.g. cube mesh in a DGX1)' (an NCCL developer, NVIDIA/nccl#299), and
finds them from the number of NVLinks between each pair of GPUs (NVIDIA/nccl@f93fe9bf, v2.3.5-5, the first
NCCL 2 whose source is public, and the same through v2.4.8 with MAXRINGS renamed MAXCHANNELS:
src/transport/p2p.cu, p2p.cc in 2.4, p2pGetRings -> p2pComputeRingsNvLink -> computeRingsRec):
- every ring is a directed cycle through all the GPUs, starting at rank 0, and takes one NVLink in its
  direction between each GPU and the next (`line[i]--` on the NVLink-count matrix, one entry per direction);
- the search is exhaustive: it keeps the largest number of such rings the links can carry, up to
  MAXRINGS = 16 (src/include/core.h);
- over at most four GPUs, when fewer than 16 rings were found, it searches again with every link counted
  twice ('Try to oversubscribe to get a better result': `values/CONNECT_NVLINK*2`), two rings sharing a link,
  and keeps that only if it finds more than twice as many rings (`compNrings2 > compNrings*2`);
- the rings found are then duplicated ('Duplicate the rings for direct NVLink'), two channels on each,
  which shares the same links and adds no bandwidth.
So one rank's bus bandwidth is the rings found (halved when two share a link) x one link's rate. Every ring
leaves and enters each GPU once, so no search can lay more than the fewest NVLinks any GPU has to the
others; on GPUs 0..N-1 of a DGX-1 this rule reaches that bound at 2, 3, 4 and 8 GPUs (P100 and V100), so the
releases that search differently (src/graph/search.cc, from 2.5) can lay no more there. It stays below it on
a P100 at 7 GPUs (2 rings where the bound is 3, as NCCL 2 was measured to run) and on a V100 at 6. Where no
ring closes over NVLinks alone (a GPU with one NVLink to the others, as GPU 4 among GPUs 0-4) there is none,
and NCCL 2 is 'falling back on simple ring' in rank order (src/misc/rings.cu).
"""

from __future__ import annotations

from itertools import permutations

from roofline.hardware.fabric_schema import Wiring

MAX_RINGS = 16
"""NCCL 2.3's MAXRINGS (src/include/core.h): the search stops at 16 rings."""

OVERSUBSCRIBE_UP_TO_GPUS = 4
"""p2pComputeRingsNvLink tries two rings per link only `if (compNrings && compNrings < nrings && nranks <= 4)`."""

Arc = tuple[int, int]


def link_counts(wiring: Wiring, gpus: int) -> dict[Arc, int]:
    """NVLinks from GPU a to GPU b (one direction of each link) among GPUs 0..gpus-1."""
    counts: dict[Arc, int] = {}
    for a, b in wiring.nvlink_pairs:
        if a < gpus and b < gpus:
            counts[(a, b)] = counts.get((a, b), 0) + 1
            counts[(b, a)] = counts.get((b, a), 0) + 1
    return counts


def _rings(counts: dict[Arc, int], gpus: int) -> list[tuple[Arc, ...]]:
    """Every directed cycle through GPUs 0..gpus-1 from GPU 0 whose hops all have an NVLink, as its arcs."""
    rings = []
    for order in permutations(range(1, gpus)):
        cycle = (0, *order)
        arcs = tuple((cycle[i], cycle[(i + 1) % gpus]) for i in range(gpus))
        if all(counts.get(arc, 0) > 0 for arc in arcs):
            rings.append(arcs)
    return rings


def most_rings(counts: dict[Arc, int], gpus: int, limit: int = MAX_RINGS) -> int:
    """The most rings (with repeats) the links carry, each taking one unit of `counts` on each of its arcs:
    what computeRingsRec's exhaustive search returns. Searched as a multiset of the cycles in a fixed order
    (the count does not depend on the order NCCL tries them in), cut short at `limit` and at the bound no
    packing passes: the fewest links any GPU has left going out."""
    rings = _rings(counts, gpus)
    left = dict(counts)

    def bound() -> int:
        return min(sum(n for (a, _), n in left.items() if a == g) for g in range(gpus))

    def search(start: int, laid: int) -> int:
        best = laid
        most = min(limit, laid + bound())
        for index in range(start, len(rings)):
            if best == most:
                break
            arcs = rings[index]
            if all(left[arc] > 0 for arc in arcs):
                for arc in arcs:
                    left[arc] -= 1
                best = max(best, search(index, laid + 1))
                for arc in arcs:
                    left[arc] += 1
        return best

    return search(0, 0)


def ring_links(wiring: Wiring, gpus: int) -> float:
    """NVLinks' worth of one rank's traffic in NCCL 2's rings over GPUs 0..gpus-1 (0 where no ring closes on
    NVLinks alone): the rings found, over the rings that share one link (1, or 2 when oversubscribed)."""
    counts = link_counts(wiring, gpus)
    found = most_rings(counts, gpus)
    if 0 < found < MAX_RINGS and gpus <= OVERSUBSCRIBE_UP_TO_GPUS:
        doubled = most_rings({arc: 2 * n for arc, n in counts.items()}, gpus)
        if doubled > 2 * found:
            return doubled / 2
    return float(found)

"""Hardware profiles: schema (pydantic), loading by name or path, the figures derived from them, and
detection of this machine (`detect`).

May import: errors, units. Never workload, model or anything above.
"""

from roofline.hardware.load import find_profile, list_profiles, load_profile
from roofline.hardware.schema import CpuProfile, GpuProfile, Profile

__all__ = ["CpuProfile", "GpuProfile", "Profile", "find_profile", "list_profiles", "load_profile"]

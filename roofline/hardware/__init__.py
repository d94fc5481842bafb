"""Hardware profiles: schema, loading by name or path, and the figures derived from them."""

from roofline.hardware.load import find_profile, list_profiles, load_profile
from roofline.hardware.schema import CpuProfile, GpuProfile, Profile

__all__ = ["CpuProfile", "GpuProfile", "Profile", "find_profile", "list_profiles", "load_profile"]

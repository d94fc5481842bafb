"""Package layout that pyproject.toml cannot say: the wheel carries the top-level hardware_profiles/ (where
the product keeps it, for people and reviewers) as the package directory roofline/hardware_profiles, mapped
rather than copied. Everything else about the package lives in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["roofline", "roofline.*"]), "roofline.hardware_profiles"],
    package_dir={"roofline.hardware_profiles": "hardware_profiles"},
)

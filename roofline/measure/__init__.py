"""Live measurements on this machine."""

"""Live measurements with torch: collectives between local processes, data-parallel runs."""

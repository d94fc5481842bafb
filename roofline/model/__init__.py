"""Cost models beyond one device's step: collectives and parallel training (comm/)."""

"""Communication: the fabric's bus bandwidth and latency, collective costs, data and tensor parallelism."""

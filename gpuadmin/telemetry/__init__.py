"""Live GPU telemetry (issue 23): Prometheus/DCGM and NVML sources, XID/ECC health, idle allocations."""

"""Platform selection: workload fit, multi-chip plans, the comparison matrix, design sweeps."""

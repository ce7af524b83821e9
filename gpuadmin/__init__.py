"""gpuadmin: a terminal admin console for GPU clusters."""

__version__ = "0.1.0"

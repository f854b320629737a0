"""SGD (docs/method.md §4.2): the setup (``run_setup``), the run (``train``), the CPU engine (``cpu``, ``cpu_steps``,
``cpu_stream``; numba), the GPU engine (``gpu``, ``gpu_check``; Triton) and binary SGD on a fixed set (``binary``)."""

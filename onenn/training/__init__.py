"""SGD (docs/method.md §4.2): the run (``train``), the CPU engine (``cpu``, ``cpu_steps``, ``cpu_stream``; numba),
the GPU engine (``gpu``; Triton) and binary SGD on a fixed set (``binary``)."""

"""SGD (docs/method.md §4.2): a run's setup (``run_setup``), the run loop (``train``), the CPU engine (``cpu``; numba
loops ``cpu_steps``, stream port ``cpu_stream``), the GPU engine (``gpu``, Triton) and its check (``gpu_check``), and
binary SGD on a fixed training set (``binary``)."""

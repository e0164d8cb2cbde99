"""Thread settings of the benchmarks' PyTorch sides, made before torch is
imported: its OpenMP and BLAS pools read the environment once, at import."""

import os


def use_threads(threads):
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)

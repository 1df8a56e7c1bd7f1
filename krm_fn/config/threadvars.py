"""The thread-count variables `spec.workloads.threads.env` may hold (THREAD_ENV: name ->
(in the default list, what reads it)), the default list derived from
it, and the variables refused there because they hold something else (NOT_THREAD_ENV:
name -> what they hold). Read by the config definition (spec.py) and its check
(records.Threads).
"""
from __future__ import annotations

# The thread-count variables `threads.env` may hold: name -> (in the default list, what
# reads it). Any other name must be listed in `threads.custom` (an in-house runtime's).
THREAD_ENV = {
    "OMP_NUM_THREADS": (True, "OpenMP runtimes (libgomp, libiomp), PyTorch, oneDNN"),
    "MKL_NUM_THREADS": (True, "Intel oneMKL"),
    "OPENBLAS_NUM_THREADS": (True, "OpenBLAS"),
    "NUMEXPR_NUM_THREADS": (True, "NumExpr"),
    "NUMEXPR_MAX_THREADS": (True, "NumExpr (its pool's upper bound)"),
    "VECLIB_MAXIMUM_THREADS": (True, "Apple Accelerate (vecLib)"),
    "BLIS_NUM_THREADS": (True, "BLIS"),
    "TORCH_NUM_THREADS": (True, "a convention of PyTorch serving images"),
    "TF_NUM_INTRAOP_THREADS": (True, "TensorFlow"),
    "RAYON_NUM_THREADS": (True, "Rust rayon (Hugging Face tokenizers)"),
    "GOMAXPROCS": (True, "the Go runtime"),
    "PYTHON_CPU_COUNT": (True, "CPython 3.13+ os.cpu_count()"),
    "TF_NUM_INTEROP_THREADS": (False, "TensorFlow (inter-op pool)"),
    "OMP_THREAD_LIMIT": (False, "OpenMP runtimes (upper bound of all teams)"),
    "GOTO_NUM_THREADS": (False, "OpenBLAS (GotoBLAS name)"),
    "NUMBA_NUM_THREADS": (False, "Numba"),
    "POLARS_MAX_THREADS": (False, "Polars"),
    "TOKIO_WORKER_THREADS": (False, "Rust tokio"),
    "ORT_INTRA_OP_NUM_THREADS": (False, "ONNX Runtime 1.29+ (microsoft/onnxruntime#29688)"),
    "ORT_INTER_OP_NUM_THREADS": (False, "ONNX Runtime 1.29+ (microsoft/onnxruntime#29688)"),
}
DEFAULT_THREAD_ENV = [name for name, (default, _) in THREAD_ENV.items() if default]
# Variables that are no thread count, refused in threads.env even when listed as custom:
# name -> what they hold (and what sets them instead).
NOT_THREAD_ENV = {
    "GOMEMLIMIT": "a memory limit in bytes (set spec.workloads.threads.goMemLimitPercent)",
    "MALLOC_ARENA_MAX": "glibc's arena count (set spec.workloads.threads.mallocArenaMax)",
    "JAVA_TOOL_OPTIONS": "JVM options (krm-fn appends -XX:ActiveProcessorCount to it)",
    "VLLM_CPU_OMP_THREADS_BIND": "a CPU list or a binding mode (the engines rule sets it)",
    "VLLM_CPU_KVCACHE_SPACE": "GiB of memory for vLLM's KV cache",
    "OMP_PROC_BIND": "an OpenMP binding policy (spec.workloads.threads.bind)",
    "OMP_PLACES": "OpenMP places (spec.workloads.threads.bind)",
    "GOGC": "a GC percentage", "PATH": "a search path", "HOME": "a directory",
    "LD_PRELOAD": "libraries to preload", "LD_LIBRARY_PATH": "a search path",
    "PYTHONPATH": "a search path",
}

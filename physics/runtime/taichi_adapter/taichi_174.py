"""The patches for taichi 1.7.4, whose tracer the engine knows: all of them.

Each is checked against the running Taichi as it is installed (patch.py); on CUDA the
loop patch has nothing to do (LLVM's loops there are the GPU's).
"""

from . import expansion, loops, real_functions, tracing

LAUNCH_REUSE = True  # launch.py keeps launch contexts (checked at first use)
GRAPHS = False  # no graph kernels (graphs.py)
MACHINE_CODE = True  # machine_code.py keeps a serial kernel's machine code (checked as it is built)

PATCHES = (tracing.POSITIONS, tracing.SOURCES, tracing.PARSE_ONCE, tracing.CLASS_CHECK, real_functions.PATCH,
           expansion.MATRIX_OPS, loops.PATCH)

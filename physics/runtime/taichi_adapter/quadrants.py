"""The patches for quadrants, the maintained fork: none.

Its tracer is laid out otherwise (its AST context, its function calls, its loop builders),
and it compiles in two thirds of taichi's time, so the engine traces through its public
path there: errors, positions and loops as quadrants makes them, every stage inlined. The
launch reuse of launch.py checks its own internals at first use.
"""

PATCHES = ()

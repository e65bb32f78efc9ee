"""The patches for quadrants, the maintained fork: none.

Its tracer is laid out otherwise (its AST context, its function calls, its loop builders),
and it compiles in two thirds of taichi's time, so the engine traces through its public
path there: errors, positions and loops as quadrants makes them, every stage inlined.
Its launcher takes other arguments than taichi 1.7.4's, so launches go through its public
call too (launch.py's reuse is not tried).
"""

LAUNCH_REUSE = False
MACHINE_CODE = False  # its IR, argument buffer and runtime are laid out otherwise
PATCHES = ()
GRAPHS = True  # graph=True kernels and ti.graph.do_while (graphs.py)

"""The step: forward() of one world (forward), time integration (integrate), the World's
program of env-step terms run inside the launch (program) and the kernels a World
launches, one parallel loop over worlds around all of it (pipeline)."""

"""Taichi itself: the one import of Taichi and its runtime (backend), the few
``@ti.func`` math helpers every stage uses (ti_math), launches that skip Taichi's argument
setup (launch), the compiled-kernel markers (kernel_cache) and host-device copies
(device_io)."""

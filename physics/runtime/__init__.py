"""Taichi itself: the one import of Taichi (taichi_import) and its runtime (backend), the few
``@ti.func`` math helpers every stage uses (ti_math), everything that reaches into
Taichi's internals, installed from one place (taichi_adapter), the compiled-kernel markers
(kernel_cache) and host-device copies (device_io)."""

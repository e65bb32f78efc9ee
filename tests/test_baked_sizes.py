"""A World's own kernel is traced with its model's sizes (physics/step/env_tables.py): two
models with the same parts but other sizes must each get a kernel of their own, in one
process and through Taichi's offline cache in the next, and a kernel shared between models
must keep reading the sizes."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from taigym.physics import layout
from taigym.physics.smooth.unrolled_tree import ancestors
from taigym.physics.runtime.taichi_adapter import traced_access
from taigym.physics.step.env_tables import UNROLLED_FACTOR_OPS, dof_tree, factor_ops, model_constants
from taigym.physics import settings
from taigym.physics.compiler.mjcf import load_mjcf_string

from taigym import physics

# a free body with two branches of ``links`` hinges each and a ball joint, no contacts:
# every such tree has the same parts (features)
_TREE = """<mujoco>
  <option timestep="0.002"/>
  <worldbody><body name="root" pos="0 0 1"><freejoint/><geom size="0.1" contype="0" conaffinity="0"/>
    <body name="ball" pos="0 0.2 0"><joint type="ball" damping="0.02"/>
      <geom type="capsule" size="0.03" fromto="0 0 0 0 0.2 0" contype="0" conaffinity="0"/></body>
    {branches}</body></worldbody>
  <actuator>{motors}</actuator>
</mujoco>"""


def chain(links: int) -> str:
    branches = ""
    for side in (1, -1):
        body = ""
        for k in reversed(range(links)):
            body = (f'<body pos="{0.3 * side} 0 0"><joint name="j{side}{k}" axis="0 1 {0.2 * k}" damping="0.05"/>'
                    f'<geom type="capsule" size="0.04" fromto="0 0 0 {0.3 * side} 0 0" contype="0" conaffinity="0"/>'
                    f"{body}</body>")
        branches += body
    motors = "".join(f'<motor joint="j{side}{k}"/>' for side in (1, -1) for k in range(links))
    return _TREE.format(branches=branches, motors=motors)


# steps each tree beside MuJoCo's mj_step and prints the largest difference
_PROCESS = textwrap.dedent("""\
    import json, sys
    import mujoco
    import numpy as np
    from taigym import physics
    from taigym.physics.compiler.mjcf import load_mjcf_string
    sys.path.insert(0, {tests!r})
    from test_baked_sizes import chain
    out = {{}}
    for links in {links}:
        xml = chain(links)
        world = physics.World(load_mjcf_string(xml), num_envs=2, precision="float64")
        ref = mujoco.MjModel.from_xml_string(xml)
        data = mujoco.MjData(ref)
        rng = np.random.default_rng(links)
        qvel, ctrl = rng.normal(0, 1, ref.nv), rng.uniform(-1, 1, ref.nu)
        world.set_state(qvel=np.tile(qvel, (2, 1)))
        world.set_ctrl(np.tile(ctrl, (2, 1)))
        data.qvel[:], data.ctrl[:] = qvel, ctrl
        world.step(50)
        mujoco.mj_step(ref, data, 50)
        out[links] = [float(np.abs(world.get("qpos") - data.qpos).max()),
                      float(np.abs(world.get("qvel") - data.qvel).max()), world._kernel_key]
    print("RESULT " + json.dumps(out))
    """)


def _process(cache, links) -> dict:
    env = {**os.environ, "TI_OFFLINE_CACHE_FILE_PATH": str(cache)}
    env.pop("TAIGYM_KERNELS", None)  # own kernels, as a user's World has them
    code = _PROCESS.format(tests=os.path.dirname(__file__), links=list(links))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])


@pytest.mark.slow  # two trees' own kernels compiled in an empty cache, then loaded from it
def test_trees_of_other_sizes_step_their_own_model_in_one_process_and_the_next(tmp_path):
    first = _process(tmp_path, (2, 3))  # both compiled here; Taichi's cache written at exit
    later = _process(tmp_path, (3, 2))  # both found in the cache, in the other order
    for run in (first, later):
        for links, (qpos, qvel, _) in run.items():
            assert qpos < 1e-12 and qvel < 1e-11, (links, qpos, qvel)  # MuJoCo's mj_step, float64
    assert first["2"][2] != first["3"][2] and first["2"][2] == later["2"][2]


def test_a_shared_kernel_serves_models_of_any_size(monkeypatch):
    monkeypatch.setenv("TAIGYM_KERNELS", "shared")
    settings.reload()
    two, three = (physics.World(load_mjcf_string(chain(n)), precision="float64") for n in (2, 3))
    assert two._kernels is three._kernels and two._kernel_key == three._kernel_key


def test_the_factor_is_written_out_for_small_trees_and_looped_for_large_ones():
    small = load_mjcf_string(chain(2))
    tree = dof_tree(small)
    constants = model_constants(layout.pack_model(small, np.float64)["sizes"], small)
    # written out only where Taichi's tracer can expand it (taichi 1.7.4's; not the quadrants fork)
    assert constants.tree == (tree if traced_access() is not None else None)
    assert tree.parent == tuple(small.dof_parentid) and constants.sizes[layout.SIZE_NV] == small.nv
    # the free joint's 6 dofs, the ball's 3 and two branches of 2 hinges: each row updates its ancestors'
    assert factor_ops(tree) == sum(sum(tree.rowlen[j] for j, _ in ancestors(tree, i)) for i in range(small.nv))
    assert [j for j, _ in ancestors(tree, small.nv - 1)] == [small.nv - 2, *reversed(range(6))]
    rope = load_mjcf_string(chain(40))
    assert factor_ops(dof_tree(rope)) > UNROLLED_FACTOR_OPS
    assert model_constants(layout.pack_model(rope, np.float64)["sizes"], rope).tree is None  # too many ops

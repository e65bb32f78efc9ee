"""A model in which every stage of the step kernel has work, for tests that compare two
builds or schedules of the step: a connect equality, a fixed tendon with limit and friction
loss, a spatial tendon wrapping a sphere with a spring and damper, joint limits, friction loss, damping and stiffness, free bodies falling onto a plane
among capsules, and motors on a joint and the tendon."""

EVERY_PART = """<mujoco>
  <option timestep="0.005" integrator="{integrator}" solver="{solver}" cone="{cone}"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <site name="top" pos="0 0 1"/>
    <body name="a" pos="0 0 0.6">
      <joint name="j1" type="hinge" axis="0 1 0" range="-0.4 0.4" limited="true" frictionloss="0.05"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.4 0 0" mass="1"/>
      <geom name="pulley" type="sphere" size="0.08" pos="0.4 0 0.12" contype="0" conaffinity="0" mass="0"/>
      <body name="b" pos="0.4 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" range="-0.3 0.3" limited="true" damping="0.1"
               stiffness="2"/>
        <geom type="capsule" size="0.04" fromto="0 0 0 0.3 0 0" mass="0.5"/>
        <site name="tip" pos="0.3 0 0"/>
      </body>
    </body>
    <body name="d" pos="0.7 0 0.3">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.2"/>
    </body>
    <body name="e" pos="-0.5 0 0.08">
      <freejoint/>
      <geom type="sphere" size="0.06" mass="0.3"/>
    </body>
  </worldbody>
  <equality><connect body1="d" body2="b" anchor="0 0 0"/></equality>
  <tendon>
    <fixed name="t" limited="true" range="-0.2 0.2" frictionloss="0.1">
      <joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/>
    </fixed>
    <spatial name="cord" stiffness="20" damping="0.5">
      <site site="top"/><geom geom="pulley"/><site site="tip"/>
    </spatial>
  </tendon>
  <actuator><motor joint="j1"/><motor tendon="t"/></actuator>
</mujoco>"""


def every_part_mjcf(integrator: str = "Euler", solver: str = "Newton", cone: str = "pyramidal") -> str:
    return EVERY_PART.format(integrator=integrator, solver=solver, cone=cone)

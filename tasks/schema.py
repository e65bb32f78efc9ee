"""The task-config schema (pydantic v2). Unknown keys are errors everywhere.

A task config says which robot, how to simulate it, how actions become controls, and
which registered terms make its observations, rewards, terminations, resets and per-env
randomization. Term names and their parameters are checked against the term registry
by :mod:`tasks.loader`, since they depend on what is registered, not on this schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .ranges import INT32_MAX, ImageSide, bounded

# counts: a launch takes its frame skip, the solver its iteration limit, as 32-bit integers
FrameSkip = bounded(1, INT32_MAX, "physics steps per env step, which one launch takes as a 32-bit count")
SolverIterations = bounded(1, INT32_MAX, "the constraint solver's iteration limit, a 32-bit count of its kernel")
EpisodeLength = bounded(1, INT32_MAX, "env steps per episode; like every count of a config, a 32-bit integer")
ResetSteps = bounded(0, INT32_MAX, "physics steps of a reset, which one launch takes as a 32-bit count")
ResetDraws = bounded(0, 1_000_000, "draws of one env's initial state, each a forward pass of its World at a reset")
# 16,384² pixels of 3 bytes keep a frame within the renderer's 32-bit indices


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitOverride(Strict):
    """A joint's limit model (physics/smooth/limits.py) and its parameters; units as the joint's."""

    model: Literal["soft", "cubic", "hard", "spring"]
    strength: float | None = Field(None, gt=0)  # cubic
    stiffness: float | None = Field(None, ge=0)  # spring
    damping: float | None = Field(None, ge=0)  # spring
    distance: float | None = Field(None, ge=0)  # hard, spring: where the limit starts acting
    restitution: float | None = Field(None, ge=0, le=1)  # hard
    bounce: float | None = Field(None, ge=0)  # hard: slowest approach that rebounds


class DriveOverride(Strict):
    """A PD drive on the joint's dofs: force = stiffness (q* - q) + damping (qd* - qd)."""

    stiffness: float | None = Field(None, ge=0)
    damping: float | None = Field(None, ge=0)
    force_limit: float | None = Field(None, gt=0)
    acceleration: bool | None = None  # gains per unit of the dof's effective inertia


class JointOverride(Strict):
    range: tuple[float, float] | None = None
    limited: bool | None = None
    damping: float | None = Field(None, ge=0)
    armature: float | None = Field(None, ge=0)
    stiffness: float | None = Field(None, ge=0)
    limit: LimitOverride | None = None
    drive: DriveOverride | None = None

    @field_validator("range")
    @classmethod
    def _ordered(cls, v):
        if v is not None and v[0] > v[1]:
            raise ValueError(f"range lower ({v[0]}) must be <= upper ({v[1]})")
        return v


class BodyOverride(Strict):
    mass: float | None = Field(None, gt=0)


class GeomOverride(Strict):
    friction: float | None = Field(None, ge=0)  # sliding friction; contacts mix two geoms' by max
    # MuJoCo's geom_size, its first 1 to 3 entries (a sphere's radius alone); the body's mass
    # and inertia stay as compiled, as when MuJoCo's geom_size is set at run time
    size: list[Annotated[float, Field(gt=0)]] | None = Field(None, min_length=1, max_length=3)


class ActuatorOverride(Strict):
    gear: float | None = None
    ctrlrange: tuple[float, float] | None = None
    kp: float | None = Field(None, gt=0)  # position-drive stiffness
    kv: float | None = Field(None, gt=0)  # velocity-drive gain

    @field_validator("ctrlrange")
    @classmethod
    def _ordered(cls, v):
        if v is not None and v[0] > v[1]:
            raise ValueError(f"ctrlrange lower ({v[0]}) must be <= upper ({v[1]})")
        return v


class RobotConfig(Strict):
    """The robot: an asset (``configs/``-relative path or ``package:file``) and overrides."""

    asset: str
    # an MJCF file (found as the asset is) whose elements join the robot's: a floor, lights or
    # a target marker for a robot file that ships without them
    scene: str | None = None
    init_qpos: list[float] | None = None  # the reset pose (before reset noise) in place of qpos0
    joints: dict[str, JointOverride] = {}
    bodies: dict[str, BodyOverride] = {}
    geoms: dict[str, GeomOverride] = {}
    actuators: dict[str, ActuatorOverride] = {}


class SimulationConfig(Strict):
    timestep: float | None = Field(None, gt=0)  # None keeps the asset's
    frame_skip: FrameSkip = 1
    # the frames and position/velocity sensors the step's terms read: those of the state the
    # step ends in, as dm_control's step leaves them (true), or of the state its last
    # physics step started from, as mj_step and so Gymnasium's envs leave them (false)
    refresh_after_step: bool = False
    integrator: Literal["Euler", "RK4", "implicitspringdamper", "implicitfast"] | None = None
    # the constraint solver and friction cone (None keeps the asset's; MuJoCo's defaults
    # are Newton and pyramidal); elliptic cones need Newton or CG
    solver: Literal["PGS", "CG", "Newton"] | None = None
    cone: Literal["pyramidal", "elliptic"] | None = None
    solver_iterations: SolverIterations | None = None
    # the constraint solver stops early once its improvement falls below this; 0 runs
    # every iteration (None keeps the asset's)
    solver_tolerance: float | None = Field(None, ge=0)
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    precision: Literal["float32", "float64"] = "float32"


class ActionConfig(Strict):
    """How a policy's action becomes actuator controls: ctrl = offset + scale * action; or,
    with ``kind: drive_position``, the PD-drive targets of ``joints`` (tasks/drive_actions.py)."""

    kind: Literal["torque", "position", "velocity", "drive_position"] = "torque"
    actuators: Literal["all"] | list[str] = "all"
    joints: Literal["all"] | list[str] = "all"  # drive kinds: the commanded driven joints
    scale: float | list[float] = 1.0
    offset: float | list[float] = 0.0
    clip: bool = False  # clip actions to the action space before scaling
    nonfinite: Literal["error", "zero"] = "error"  # refuse NaN/inf actions, or zero and flag them


class Noise(Strict):
    kind: Literal["uniform", "gaussian"]
    scale: float = Field(gt=0)


class TermConfig(Strict):
    term: str
    params: dict[str, Any] = {}


class ObservationTerm(TermConfig):
    clip: tuple[float, float] | None = None
    noise: Noise | None = None

    @field_validator("clip")
    @classmethod
    def _ordered(cls, v):
        if v is not None and v[0] > v[1]:
            raise ValueError(f"clip lower ({v[0]}) must be <= upper ({v[1]})")
        return v


class RewardTerm(TermConfig):
    weight: float = 1.0


class AgentConfig(Strict):
    """One agent of a multi-agent task: the actuators it drives, what it observes, and the
    reward and termination terms that are its own.

    An agent's reward is the task's ``rewards`` (shared by every agent: a team's goal) plus
    its own ``rewards`` (a contestant's score, one member's shaping). The task's
    ``terminations`` end the episode of every agent at once. An agent's own ``terminations``
    end its episode alone: it leaves the game while the others play on in the same scene,
    which resets as a whole only when the env is reset. Its own reward terms see its own
    ending (``alive`` is 0 on that step); the shared ones see the task's.
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    actuators: list[str] = Field(min_length=1)
    observations: list[ObservationTerm] = Field(min_length=1)
    rewards: list[RewardTerm] = []
    terminations: list[TermConfig] = []


class RenderConfig(Strict):
    """How ``render_mode="rgb_array"`` frames are made: image size and camera.

    ``camera`` names one of the robot model's cameras; without it a tracking camera looks
    at ``track_body`` (default: the robot's free-floating root, or the model's centre for a
    fixed-base robot) from ``distance`` (default: from the model's size) at ``azimuth``
    and ``elevation`` [deg], as MuJoCo's mjvCamera.
    """

    width: ImageSide = 480
    height: ImageSide = 480
    camera: str | None = None
    track_body: str | None = None
    distance: float | None = Field(None, gt=0)
    azimuth: float = 90.0
    elevation: float = Field(-20.0, ge=-90, le=90)
    fovy: float = Field(45.0, gt=0, lt=180)
    shadows: bool = True

    @model_validator(mode="after")
    def _one_camera(self):
        if self.camera is not None and self.track_body is not None:
            raise ValueError("give either camera (a model camera) or track_body (a tracking camera), not both")
        return self


class TaskConfig(Strict):
    # a namespace and a name, hyphens allowed as in dm_control-style names (TaiGym/cartpole-swingup-v0)
    id: str = Field(pattern=r"^[A-Za-z0-9_]+/[A-Za-z0-9_][A-Za-z0-9_-]*-v\d+$")
    description: str = ""
    robot: RobotConfig
    simulation: SimulationConfig = SimulationConfig()
    actions: ActionConfig = ActionConfig()
    observations: list[ObservationTerm] = Field(min_length=1)
    rewards: list[RewardTerm] = []
    terminations: list[TermConfig] = []
    resets: list[TermConfig] = []
    # an env's initial state drawn again (its reset terms, from its own generator) while it
    # has a contact, up to this many draws in all (0: drawn once, contacts or not)
    reset_until_no_contact: ResetDraws = 0
    # physics steps, at zero control, a reset env takes from its drawn state before its
    # first observation (a random pose left to settle on the floor); its time starts after
    reset_steps: ResetSteps = 0
    # where the first of them takes its accelerations: the drawn state, or the reference
    # state at rest (qpos0, as dm_control's Physics.step after a reset, whose mj_step2
    # finishes the reset's forward pass at qpos0); the latter for hinges and slides only
    reset_first_step: Literal["drawn", "reference"] = "drawn"
    randomization: list[TermConfig] = []
    commands: list[TermConfig] = []  # per-env goals (velocities to track), resampled on a schedule
    episode_length: EpisodeLength
    agents: list[AgentConfig] | None = None
    render: RenderConfig = RenderConfig()

    # where the config came from, for error messages after validation
    _source: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _unique_agents(self):
        if self.agents is not None:
            names = [a.name for a in self.agents]
            if len(set(names)) != len(names):
                raise ValueError(f"agent names must be unique, got {names}")
        return self

    @property
    def multi_agent(self) -> bool:
        return self.agents is not None

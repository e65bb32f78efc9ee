"""Small math for the kernels: quaternions, 3x3 and spatial (6D) algebra, table access.

Everything is built per float type by :func:`make_math`, so float32 and float64
kernels compute in their own precision: Taichi types bare float literals as float32,
which would silently round float64 arithmetic, so constants go through ``fp(...)``.

Spatial vectors are (angular, linear), as MuJoCo's ``cvel``/``cdof``; a com-based
inertia is MuJoCo's 10-vector (Ixx, Iyy, Izz, Ixy, Ixz, Iyz, m*dx, m*dy, m*dz, m).
"""


import functools
import math
import types
from fractions import Fraction

from ..runtime.backend import ti

_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")


def _high_bits(x: Fraction, bits: int) -> float:
    mantissa, exponent = math.frexp(float(x))
    return math.ldexp(math.floor(mantissa * 2**bits), exponent - bits)


_TWO_OVER_PI = float(2 / _PI)
_HALF_PI_HI = _high_bits(_PI / 2, 26)  # 26 bits: k * _HALF_PI_HI is exact for |k| < 2^27
_HALF_PI_LO = float(_PI / 2 - Fraction(_HALF_PI_HI))


def _vector_types(fp):
    return dict(vec3=ti.types.vector(3, fp), vec4=ti.types.vector(4, fp), vec6=ti.types.vector(6, fp),
                vec10=ti.types.vector(10, fp), mat3=ti.types.matrix(3, 3, fp))


@functools.lru_cache(maxsize=None)
def make_math(fp):
    """Every helper below in one namespace, with the vector types (vec3, vec4, vec6, vec10,
    mat3) of ``fp``: what the stages call ``m``."""
    helpers = {}
    for part in (make_table_access(fp), make_rotations(fp), make_spatial(fp)):
        helpers.update(vars(part))
    return types.SimpleNamespace(**helpers)


@functools.lru_cache(maxsize=None)
def make_table_access(fp):
    """Where an env's rows start in the packed tables, and vector reads from a flat table
    laid out at run time."""
    vec3, vec4, vec6, vec10, mat3 = _vector_types(fp).values()

    # --- a pose from a flat table whose layout is given at run time (the collision stage's
    # body poses, physics/collision/driver.py); every described table has its own accessors
    # (physics/access.py)
    @ti.func
    def at3(a: ti.template(), i):
        return vec3(a[i], a[i + 1], a[i + 2])

    @ti.func
    def at4(a: ti.template(), i):
        return vec4(a[i], a[i + 1], a[i + 2], a[i + 3])

    @ti.func
    def row_set(w, table: ti.template(), stride, width: ti.template()):
        """Where env w's rows start in a flat model table of ``stride`` entries per row set
        (rows ``width`` wide): one set shared by every env, or one per env (World.set_param).
        The constant width goes last for the reason given in env_start. An env's view of
        the tables (physics/step/env_tables.py) holds it."""
        if ti.static(hasattr(table, "env_set")):
            return table.env_set
        else:
            return (w % (table.shape[0] // stride)) * (stride // width) * width

    @ti.func
    def param_set(w, table: ti.template()):
        """Env w's parameter set in a model table (its first index): one set shared by every
        env, or one per env (World.set_param). An env's view of the tables
        (physics/step/env_tables.py) holds it."""
        if ti.static(hasattr(table, "env_set")):
            return table.env_set
        else:
            return w % table.shape[0]

    @ti.func
    def env_start(w, sizes: ti.template(), stride_slot: ti.template(), width: ti.template()):
        """Env w's first entry in a flat data table of rows ``width`` wide; sizes[stride_slot]
        holds a whole number of rows. Row widths are powers of two (layout.py), and
        multiplying by the constant width last shows LLVM that every row starts at a
        multiple of it: a row's column offsets then fold into the loads' addresses instead
        of each paying its own add and sign extension (Taichi's i32 index arithmetic
        carries no no-overflow flags). Row reads run ~25% faster. Interleaved (physics/runtime/lanes.py),
        the start is env w's lane in its block, and entry e lies LANES * e after it."""
        if ti.static(_lanes() == 1):
            return (w * (sizes[stride_slot] // width)) * width
        else:
            return env_offset(w, sizes[stride_slot])

    @ti.func
    def env_offset(w, stride):
        """Env w's first entry in a flat table of ``stride`` entries per env."""
        if ti.static(_lanes() == 1):
            return w * stride
        else:
            lanes = ti.static(_lanes())
            return (w // lanes) * (stride * lanes) + w % lanes

    @ti.func
    def env_rows(w, n, width):
        """Env w's first entry in a flat data table of ``n`` rows ``width`` wide per env."""
        if ti.static(_lanes() == 1):
            return w * n * width
        else:
            return env_offset(w, n * width)

    entry = flat_entry

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_")})


@ti.func
def flat_entry(o, e):
    """Entry e of the env whose entries start at o in a flat data table (env_start,
    env_offset, env_rows): the next env's copy sits beside it where the table is interleaved."""
    if ti.static(_lanes() == 1):
        return o + e
    else:
        return o + e * ti.static(_lanes())


def _lanes() -> int:
    from .lanes import table_lanes  # at trace time: the runtime has started

    return table_lanes()


@functools.lru_cache(maxsize=None)
def make_rotations(fp):
    """Quaternions (w, x, y, z), rotations and the kernels' own sine and cosine."""
    vec3, vec4, vec6, vec10, mat3 = _vector_types(fp).values()

    # Taylor series of sin and cos on |r| <= pi/4, cut where the next term is below the
    # type's rounding: (pi/4)^19 / 19! ~ 1e-19 for float64, (pi/4)^11 / 11! ~ 2e-9 for float32
    nterms = 9 if fp == ti.f64 else 5
    sin_taylor = [(-1) ** n / math.factorial(2 * n + 1) for n in range(nterms)]
    cos_taylor = [(-1) ** n / math.factorial(2 * n) for n in range(nterms + 1)]

    # --- quaternions (w, x, y, z)
    @ti.func
    def quat_mul(a: ti.template(), b):
        return vec4(
            a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
        )

    @ti.func
    def quat_conj(q):
        return vec4(q[0], -q[1], -q[2], -q[3])

    @ti.func
    def quat_to_mat(q):
        w, x, y, z = q[0], q[1], q[2], q[3]
        return mat3(
            [
                [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
                [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
                [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
            ]
        )

    @ti.func
    def quat_rotate(q, v):
        """Rotate v by unit q: v + 2 u x (u x v + w v), u = q's vector part."""
        u = vec3(q[1], q[2], q[3])
        return v + 2 * u.cross(u.cross(v) + q[0] * v)

    @ti.func
    def quat_normalize(q):
        n = q.norm()
        r = vec4(1, 0, 0, 0)
        if n > fp(1e-15):
            r = q / n
        return r

    @ti.func
    def sincos(x):
        """(sin x, cos x) from one shared range reduction and two polynomials: inlined,
        it costs about half of the two libm calls Taichi makes for ti.sin and ti.cos,
        and every hinge's frame needs both. Error within a few ulp of max(|x|, 1)."""
        k = ti.round(x * fp(_TWO_OVER_PI))
        # pi/2 in two parts, the first exact in k * part: Taichi's fast math may fold them,
        # which leaves an error of about one ulp of x, the rounding x itself carries
        r = (x - k * fp(_HALF_PI_HI)) - k * fp(_HALF_PI_LO)
        r2 = r * r
        s = fp(sin_taylor[-1])
        for n in ti.static(range(len(sin_taylor) - 2, -1, -1)):
            s = s * r2 + fp(sin_taylor[n])
        s = s * r
        c = fp(cos_taylor[-1])
        for n in ti.static(range(len(cos_taylor) - 2, -1, -1)):
            c = c * r2 + fp(cos_taylor[n])
        quadrant = ti.cast(k, ti.i64) & 3
        odd = (quadrant & 1) == 1
        sn = ti.select(odd, c, s)
        cs = ti.select(odd, s, c)
        sn = ti.select(quadrant >= 2, -sn, sn)
        cs = ti.select(((quadrant + 1) & 2) != 0, -cs, cs)
        return sn, cs

    @ti.func
    def half_angle_quat(axis, s, c):
        """The rotation about unit ``axis`` whose half angle has sine s and cosine c."""
        return vec4(c, axis[0] * s, axis[1] * s, axis[2] * s)

    @ti.func
    def axis_angle_quat(axis, angle):
        s, c = sincos(angle * fp(0.5))
        return half_angle_quat(axis, s, c)

    @ti.func
    def quat_integrate(q, omega, dt):
        """q * exp(omega dt / 2), normalized: rotate by body-frame angular velocity omega
        for dt (MuJoCo's mju_quatIntegrate)."""
        n = omega.norm()
        r = q
        if n > fp(1e-15):
            r = quat_mul(q, axis_angle_quat(omega / n, n * dt))
        return quat_normalize(r)

    @ti.func
    def quat_sub(qa, qb):
        """3-vector v with qa = qb * exp(v): the rotation from qb to qa, in qb's frame."""
        d = quat_mul(quat_conj(qb), qa)
        if d[0] < 0:
            d = -d
        s = vec3(d[1], d[2], d[3]).norm()
        r = vec3(0)
        if s > fp(1e-15):
            r = vec3(d[1], d[2], d[3]) * (2 * ti.atan2(s, d[0]) / s)
        return r

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_")})


@functools.lru_cache(maxsize=None)
def make_spatial(fp):
    """Spatial (6D) motion and force algebra and com-based inertias."""
    vec3, vec4, vec6, vec10, mat3 = _vector_types(fp).values()

    # --- spatial algebra
    @ti.func
    def ang(v):
        return vec3(v[0], v[1], v[2])

    @ti.func
    def lin(v):
        return vec3(v[3], v[4], v[5])

    @ti.func
    def spatial(a: ti.template(), b):
        return vec6(a[0], a[1], a[2], b[0], b[1], b[2])

    @ti.func
    def cross_motion(v, u):
        """v x u for motion vectors."""
        w = ang(v)
        return spatial(w.cross(ang(u)), w.cross(lin(u)) + lin(v).cross(ang(u)))

    @ti.func
    def cross_force(v, f):
        """v x* f for a force f."""
        w = ang(v)
        return spatial(w.cross(ang(f)) + lin(v).cross(lin(f)), w.cross(lin(f)))

    @ti.func
    def mul_inert(i, v):
        """Com-based inertia i (10-vector) times a motion vector v."""
        w = ang(v)
        vl = lin(v)
        h = vec3(i[6], i[7], i[8])
        rot = mat3([[i[0], i[3], i[4]], [i[3], i[1], i[5]], [i[4], i[5], i[2]]])
        return spatial(rot @ w + h.cross(vl), i[9] * vl + w.cross(h))

    @ti.func
    def inert_com(moments, rot, dif, mass):
        """Inertia (principal ``moments`` in frame ``rot``) of a body whose com is ``dif``
        from the reference point, as a com-based 10-vector."""
        full = rot @ mat3([[moments[0], 0, 0], [0, moments[1], 0], [0, 0, moments[2]]]) @ rot.transpose()
        full += mass * (dif.dot(dif) * ti.Matrix.identity(fp, 3) - dif.outer_product(dif))
        h = mass * dif
        return vec10(full[0, 0], full[1, 1], full[2, 2], full[0, 1], full[0, 2], full[1, 2], h[0], h[1], h[2], mass)

    @ti.func
    def dof_com(axis, offset, rotational):
        """Motion vector of a unit dof: rotation about ``axis`` through a point ``offset``
        away from the reference point, or translation along ``axis``."""
        r = spatial(vec3(0), axis)
        if rotational:
            r = spatial(axis, axis.cross(offset))
        return r

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_")})

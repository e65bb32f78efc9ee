"""Rows of MuJoCo's soft limits (mj_instantiateLimit): a row per bound that a limited
joint (hinge, slide: qpos; ball: rotation angle, rad) or fixed tendon (length) is within
its margin of. pos = the distance to the bound (negative once past it), force >= 0
pushing away from it. Joints with another limit model (PhysX's hard and spring limits)
make their rows in physics/smooth/limits.py.
"""

import functools
import types

from ... import layout as L
from ...runtime.lanes import env_index
from ...model import JNT_BALL, JNT_HINGE, JNT_SLIDE
from ...runtime.backend import ti
from ...access import make_access
from ...runtime.ti_math import make_math
from .jacobian import make_row_jacobian
from .table import (
    _INF,
    _MINVAL,
    CNSTR_LIMIT_JOINT,
    CNSTR_LIMIT_TENDON,
    make_row_table,
)


@functools.lru_cache(maxsize=None)
def make_limit_rows(fp):
    m = make_math(fp)
    A = make_access(fp)
    table = make_row_table(fp)
    new_row, set_row, copy_sol = table.new_row, table.set_row, table.copy_sol
    tendon_jacobian_add = make_row_jacobian(fp).tendon_jacobian_add

    @ti.func
    def joint_limits(w, nefc, sizes: ti.template(), jnt_i: ti.template(), jnt_f: ti.template(),
                     dof_f: ti.template(), qpos: ti.template(), efc_J: ti.template(), efc_f: ti.template(),
                     efc_n: ti.template()):
        """Rows for joints within their margin of a limit (MuJoCo's mj_instantiateLimit)."""
        n = nefc
        mj = m.row_set(w, jnt_f, sizes[L.SIZE_JNTF_STRIDE], L.NJNT_F)
        md = m.row_set(w, dof_f, sizes[L.SIZE_DOFF_STRIDE], L.NDOF_F)
        for j in range(sizes[L.SIZE_NJNT]):
            jtype = A.jnt_type(jnt_i, j)
            if A.jnt_limited(jnt_i, j) != 0 and (jtype == JNT_HINGE or jtype == JNT_SLIDE):
                value = qpos[env_index(w, A.jnt_qposadr(jnt_i, j))]
                margin = A.jnt_margin(jnt_f, mj, j)
                da = A.jnt_dofadr(jnt_i, j)
                for s in ti.static(range(2)):
                    side = fp(-1.0) if s == 0 else fp(1.0)
                    dist = side * (A.jnt_range_at(jnt_f, mj, j, s) - value)
                    if dist < margin:
                        row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                        if row >= 0:
                            efc_J[env_index(w, row, da)] = -side
                            set_row(w, row, efc_f, CNSTR_LIMIT_JOINT, j, dist, margin,
                                    A.dof_invweight0(dof_f, md, da),
                                    fp(0.0), fp(_INF))
                            copy_sol(w, row, efc_f, A.jnt_solref(jnt_f, mj, j), A.jnt_solimp(jnt_f, mj, j))
                            n += 1
            elif A.jnt_limited(jnt_i, j) != 0 and jtype == JNT_BALL:
                pa = A.jnt_qposadr(jnt_i, j)
                q = m.quat_normalize(m.vec4(qpos[env_index(w, pa)], qpos[env_index(w, pa + 1)], qpos[env_index(w, pa + 2)], qpos[env_index(w, pa + 3)]))
                axis_angle = quat_axis_angle(q)
                axis = m.vec3(axis_angle[0], axis_angle[1], axis_angle[2])
                angle = axis_angle[3]
                margin = A.jnt_margin(jnt_f, mj, j)
                dist = ti.max(A.jnt_range_at(jnt_f, mj, j, 0), A.jnt_range_at(jnt_f, mj, j, 1)) - angle
                if dist < margin:
                    row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                    if row >= 0:
                        da = A.jnt_dofadr(jnt_i, j)
                        for k in ti.static(range(3)):
                            efc_J[env_index(w, row, da + k)] = -axis[k]
                        set_row(w, row, efc_f, CNSTR_LIMIT_JOINT, j, dist, margin,
                                A.dof_invweight0(dof_f, md, da),
                                fp(0.0), fp(_INF))
                        copy_sol(w, row, efc_f, A.jnt_solref(jnt_f, mj, j), A.jnt_solimp(jnt_f, mj, j))
                        n += 1
        return n

    @ti.func
    def quat_axis_angle(q):
        """(unit rotation axis, angle in [0, pi]) of a unit quaternion as one 4-vector
        (MuJoCo's mju_quat2Vel with dt = 1, split into direction and magnitude)."""
        v = m.vec3(q[1], q[2], q[3])
        s = v.norm()
        axis = m.vec3(fp(1.0), fp(0.0), fp(0.0))
        angle = fp(0.0)
        if s > fp(_MINVAL):
            angle = 2 * ti.atan2(s, q[0])
            if angle > fp(3.141592653589793):
                angle -= 2 * fp(3.141592653589793)
            axis = v / s
            if angle < 0:
                angle = -angle
                axis = -axis
        return m.vec4(axis[0], axis[1], axis[2], angle)

    @ti.func
    def tendon_limits(w, nefc, sizes: ti.template(), jnt_i: ti.template(), ten_i: ti.template(),
                      ten_f: ti.template(), ten_d: ti.template(),
                      efc_J: ti.template(), efc_f: ti.template(), efc_n: ti.template()):
        """Rows for limited tendons within their margin of a bound, as joint limits."""
        n = nefc
        mt = m.param_set(w, ten_f)
        for t in range(sizes[L.SIZE_NTENDON]):
            if A.tendon_limited(ten_i, t) != 0:
                length = A.ten_length(ten_d, w, t)
                margin = A.tendon_margin(ten_f, mt, t)
                for s in ti.static(range(2)):
                    side = fp(-1.0) if s == 0 else fp(1.0)
                    dist = side * (A.tendon_range_at(ten_f, mt, t, s) - length)
                    if dist < margin:
                        row = new_row(w, n, sizes, efc_J, efc_f, efc_n)
                        if row >= 0:
                            tendon_jacobian_add(w, row, t, -side, sizes, ten_d, efc_J)
                            set_row(w, row, efc_f, CNSTR_LIMIT_TENDON, t, dist, margin, A.tendon_invweight0(ten_f, mt, t),
                                    fp(0.0), fp(_INF))
                            copy_sol(w, row, efc_f, A.tendon_solref_lim(ten_f, mt, t), A.tendon_solimp_lim(ten_f, mt, t))
                            n += 1
        return n

    return types.SimpleNamespace(joint_limits=joint_limits, tendon_limits=tendon_limits)

"""The sensor stage: MuJoCo's position, velocity and acceleration sensors, into ``sensordata``.

Run at the end of each step's first forward pass (physics/step/integrate.py, ``stage_end``),
as MuJoCo's mj_forward computes them: after a step, ``sensordata`` holds the values of the
state the step started from, as mjData's after mj_step. The acceleration-stage sensors that
read body accelerations or joint forces (accelerometer, force, torque, framelinacc,
frameangacc) first run the post-constraint pass (physics/constraint/reaction.py).

Each sensor's object is a frame on a body (layout.SENSOR_F): a site, a geom, the body's
inertial frame or its own; its pose is the body's composed with it, as MuJoCo composes
site_xpos and geom_xpos. The subtree sensors sum over the bodies below theirs: the mass-
weighted velocity, and the angular momentum about the subtree's centre of mass, which
MuJoCo's mj_subtreeVel accumulates leaf to root.
"""

import functools
import types

from . import layout as L
from .access import make_access
from .compiler.sensors import KINDS, OBJ_BODY, OBJ_GEOM, OBJ_SITE, OBJ_XBODY, POSITIVE, REAL, STAGE_ACC
from .constraint.reaction import make_reaction
from .constraint.rows import CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL
from .model import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_SPHERE
from .rays import make_rays
from .runtime.backend import ti
from .runtime.lanes import env_index
from .runtime.ti_math import make_math

_CODE = {name: kind.code for name, kind in KINDS.items()}
_MINDIST, _MAXFORCE, _NETFORCE = 1, 2, 3  # compiler.sensors.CONTACT_REDUCE
MINVAL = 1e-15  # mjMINVAL
BIG = 1e30


@functools.lru_cache(maxsize=None)
def make_sensors(fp, ray_meshes: bool = True, contact_sensors: bool = True):
    """The sensor stage; ``ray_meshes``: rangefinders see mesh geoms (Features.ray_meshes);
    ``contact_sensors``: the contact sensor is compiled in (Features.contact_sensors)."""
    m = make_math(fp)
    A = make_access(fp)
    reaction = make_reaction(fp)
    rays = make_rays(fp, ray_meshes)
    S = types.SimpleNamespace(**{name: ti.static(code) for name, code in _CODE.items()})

    # --- frames -----------------------------------------------------------------------
    @ti.func
    def frame_pos(w, body, local, t: ti.template()):
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        return A.body_xpos(t.body_d, o, body) + A.body_xmat(t.body_d, o, body) @ local

    @ti.func
    def frame_mat(w, body, quat, t: ti.template()):
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        return m.quat_to_mat(m.quat_mul(A.body_xquat(t.body_d, o, body), quat))

    @ti.func
    def frame_quat(w, body, quat, t: ti.template()):
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        return m.quat_mul(A.body_xquat(t.body_d, o, body), quat)

    @ti.func
    def at_point(motion, point, w, body, t: ti.template()):
        """A com-based motion (or, ``force``, wrench) vector of ``body``'s tree moved to
        ``point`` (MuJoCo's mju_transformSpatial, world-oriented)."""
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        dif = point - A.body_subtree_com(t.body_d, o, A.body_root(t.body_i, body))
        return m.spatial(m.ang(motion), m.lin(motion) - dif.cross(m.ang(motion)))

    @ti.func
    def velocity(w, body, point, t: ti.template()):
        """(angular, linear) velocity of the frame at ``point`` on ``body``, world-oriented."""
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        return at_point(A.body_cvel(t.body_d, o, body), point, w, body, t)

    @ti.func
    def acceleration(w, body, point, t: ti.template()):
        """(angular, linear) acceleration at ``point``, with the Coriolis term of the rotating
        frame (MuJoCo's mj_objectAcceleration), world-oriented."""
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        acc = at_point(A.body_cacc(t.body_d, o, body), point, w, body, t)
        vel = velocity(w, body, point, t)
        return m.spatial(m.ang(acc), m.lin(acc) + m.ang(vel).cross(m.lin(vel)))

    # --- subtrees ---------------------------------------------------------------------
    @ti.func
    def in_subtree(b, root, t: ti.template()):
        a = b
        while a > root:
            a = A.body_parent(t.body_i, a)
        return a == root

    @ti.func
    def subtree_linvel(w, s, t: ti.template()):
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mf = m.row_set(w, t.body_f, t.sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        momentum = m.vec3(0)
        for b in range(s, t.sizes[L.SIZE_NBODY]):
            if in_subtree(b, s, t):
                momentum += A.body_mass(t.body_f, mf, b) * m.lin(velocity(w, b, A.body_xipos(t.body_d, o, b), t))
        return momentum / ti.max(fp(MINVAL), A.body_subtree_mass(t.body_d, o, s))

    @ti.func
    def subtree_angmom(w, s, t: ti.template()):
        o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
        mf = m.row_set(w, t.body_f, t.sizes[L.SIZE_BODYF_STRIDE], L.NBODY_F)
        com = A.body_subtree_com(t.body_d, o, s)
        vcom = subtree_linvel(w, s, t)
        total = m.vec3(0)
        for b in range(s, t.sizes[L.SIZE_NBODY]):
            if in_subtree(b, s, t):
                xipos = A.body_xipos(t.body_d, o, b)
                vel = velocity(w, b, xipos, t)
                rot = A.body_ximat(t.body_d, o, b)
                spin = rot @ (A.body_inertia(t.body_f, mf, b) * (rot.transpose() @ m.ang(vel)))
                total += spin + (xipos - com).cross(A.body_mass(t.body_f, mf, b) * (m.lin(vel) - vcom))
        return total

    # --- touch: contacts whose normal force passes through the site's zone -----------
    @ti.func
    def interval_hits(lo, hi):
        return lo <= hi and hi >= 0

    @ti.func
    def sphere_hit(p, v, r):
        """Whether the ray p + s v, s >= 0, meets the ball of radius r at the origin."""
        pp, pv, vv = p.dot(p), p.dot(v), v.dot(v)
        return pp <= r * r or (pv < 0 and pp - pv * pv / ti.max(vv, fp(MINVAL)) <= r * r)

    @ti.func
    def slab(p, v, half):
        """The ray's parameters inside |x| <= half along one axis: (lo, hi)."""
        lo, hi = fp(-BIG), fp(BIG)
        if ti.abs(v) < MINVAL:
            if ti.abs(p) > half:
                lo, hi = fp(BIG), fp(-BIG)
        else:
            a, b = (-half - p) / v, (half - p) / v
            lo, hi = ti.min(a, b), ti.max(a, b)
        return lo, hi

    @ti.func
    def cylinder_hit(p, v, r, h):
        lo, hi = slab(p[2], v[2], h)
        a = v[0] * v[0] + v[1] * v[1]
        c = p[0] * p[0] + p[1] * p[1] - r * r
        if a < MINVAL:
            if c > 0:
                lo = fp(BIG)
        else:
            b = p[0] * v[0] + p[1] * v[1]
            disc = b * b - a * c
            if disc < 0:
                lo = fp(BIG)
            else:
                root = ti.sqrt(disc)
                lo, hi = ti.max(lo, (-b - root) / a), ti.min(hi, (-b + root) / a)
        return interval_hits(lo, hi)

    @ti.func
    def zone_hit(zone, size, p, v):
        """Whether the ray from p along v (the zone's frame) meets the zone, a site's shape
        (MuJoCo's mju_rayGeom >= 0): convex, so either p is inside or the ray enters ahead."""
        hit = False
        if zone == GEOM_SPHERE:
            hit = sphere_hit(p, v, size[0])
        elif zone == GEOM_ELLIPSOID:
            scale = m.vec3(1.0 / size[0], 1.0 / size[1], 1.0 / size[2])
            hit = sphere_hit(p * scale, v * scale, fp(1.0))
        elif zone == GEOM_CAPSULE:
            up = m.vec3(0.0, 0.0, size[1])
            hit = (cylinder_hit(p, v, size[0], size[1]) or sphere_hit(p - up, v, size[0])
                   or sphere_hit(p + up, v, size[0]))
        elif zone == GEOM_CYLINDER:
            hit = cylinder_hit(p, v, size[0], size[1])
        elif zone == GEOM_BOX:
            lo, hi = fp(-BIG), fp(BIG)
            for k in ti.static(range(3)):
                a, b = slab(p[k], v[k], size[k])
                lo, hi = ti.max(lo, a), ti.min(hi, b)
            hit = interval_hits(lo, hi)
        return hit

    @ti.func
    def normal_force(w, adr, dim, t: ti.template()):
        """The normal force of the contact whose rows start at ``adr`` (mj_contactForce's
        first component): a pyramid's edges sum to it."""
        kind = ti.cast(A.efc_type(t.efc_f, w, adr), ti.i32)
        force = A.efc_force(t.efc_f, w, adr)
        if kind == CNSTR_CONTACT_PYRAMIDAL:
            for r in range(1, 2 * (dim - 1)):
                force += A.efc_force(t.efc_f, w, adr + r)
        return force

    @ti.func
    def touch(w, s, t: ti.template()):
        body = A.sensor_body(t.sensor_i, s)
        ms = m.param_set(w, t.sensor_f)
        pos = frame_pos(w, body, A.sensor_pos(t.sensor_f, ms, s), t)
        rot = frame_mat(w, body, A.sensor_quat(t.sensor_f, ms, s), t)
        size = A.sensor_size(t.sensor_f, ms, s)
        zone = A.sensor_zone(t.sensor_i, s)
        total = fp(0.0)
        for c in range(A.ncon(t.con_n, w)):
            adr = A.contact_efc_address(t.con_i, w, c)
            body1 = A.geom_body(t.geom_i, A.contact_geom1(t.con_i, w, c))
            body2 = A.geom_body(t.geom_i, A.contact_geom2(t.con_i, w, c))
            if adr >= 0 and (body1 == body or body2 == body):
                force = normal_force(w, adr, A.contact_dim(t.con_i, w, c), t)
                if force > 0:
                    normal = m.vec3(A.contact_frame_at(t.con_f, w, c, 0), A.contact_frame_at(t.con_f, w, c, 1),
                                    A.contact_frame_at(t.con_f, w, c, 2))
                    if body == body2:
                        normal = -normal
                    point = m.vec3(A.contact_pos_at(t.con_f, w, c, 0), A.contact_pos_at(t.con_f, w, c, 1),
                                   A.contact_pos_at(t.con_f, w, c, 2))
                    if zone_hit(zone, size, rot.transpose() @ (point - pos), rot.transpose() @ normal):
                        total += force
        return total

    # --- contact: the contacts that match, reduced to the sensor's slots ----------------
    @ti.func
    def contact_point(w, c, t: ti.template()):
        return m.vec3(A.contact_pos_at(t.con_f, w, c, 0), A.contact_pos_at(t.con_f, w, c, 1),
                      A.contact_pos_at(t.con_f, w, c, 2))

    @ti.func
    def contact_frame(w, c, t: ti.template()):
        """Contact c's frame, its rows the normal and the two tangents."""
        frame = m.mat3(0)
        for r in ti.static(range(3)):
            for q in ti.static(range(3)):
                frame[r, q] = A.contact_frame_at(t.con_f, w, c, 3 * r + q)
        return frame

    @ti.func
    def contact_force(w, c, t: ti.template()):
        """(force, torque) of contact c in its own frame (MuJoCo's mj_contactForce): a
        pyramid's edges decode to normal = their sum, tangent k = mu_k (edge+ - edge-);
        an elliptic cone's rows are the components; zero for a contact without rows."""
        local = m.vec6(0)
        adr = A.contact_efc_address(t.con_i, w, c)
        if adr >= 0:
            dim = A.contact_dim(t.con_i, w, c)
            kind = ti.cast(A.efc_type(t.efc_f, w, adr), ti.i32)
            if kind == CNSTR_CONTACT_FRICTIONLESS:
                local[0] = A.efc_force(t.efc_f, w, adr)
            elif kind == CNSTR_CONTACT_PYRAMIDAL:
                for r in range(2 * (dim - 1)):
                    local[0] += A.efc_force(t.efc_f, w, adr + r)
                for k in range(dim - 1):
                    local[k + 1] = A.contact_friction_at(t.con_f, w, c, k) * (
                        A.efc_force(t.efc_f, w, adr + 2 * k) - A.efc_force(t.efc_f, w, adr + 2 * k + 1))
            else:
                for k in range(dim):
                    local[k] = A.efc_force(t.efc_f, w, adr + k)
        return local

    @ti.func
    def involves(objtype, objid, body, geom, t: ti.template()):
        """Whether a contact's side (its geom and body) is the sensor object (checkMatch):
        any for none or a site (tested by position), the geom, the body or its subtree."""
        hit = True
        if objtype == OBJ_GEOM:
            hit = geom == objid
        elif objtype == OBJ_BODY:
            hit = body == objid
        elif objtype == OBJ_XBODY:
            hit = in_subtree(body, objid, t)
        return hit

    @ti.func
    def inside_zone(zone, size, p):
        """Whether p (the zone's frame) is strictly inside a site's shape (mju_insideGeom)."""
        inside = False
        if zone == GEOM_SPHERE:
            inside = p.dot(p) < size[0] * size[0]
        elif zone == GEOM_CAPSULE:
            dz = p[2] - ti.min(ti.max(p[2], -size[1]), size[1])
            inside = p[0] * p[0] + p[1] * p[1] + dz * dz < size[0] * size[0]
        elif zone == GEOM_ELLIPSOID:
            inside = (p[0] * p[0] / (size[0] * size[0]) + p[1] * p[1] / (size[1] * size[1])
                      + p[2] * p[2] / (size[2] * size[2])) < 1
        elif zone == GEOM_CYLINDER:
            inside = ti.abs(p[2]) < size[1] and p[0] * p[0] + p[1] * p[1] < size[0] * size[0]
        elif zone == GEOM_BOX:
            inside = ti.abs(p[0]) < size[0] and ti.abs(p[1]) < size[1] and ti.abs(p[2]) < size[2]
        return inside

    @ti.func
    def contact_match(w, s, c, t: ti.template()):
        """0: contact c does not match sensor s; 1: it does, its normal from the sensor's
        first object to its second; -1: it does, its normal the other way (matchContact)."""
        objtype, objid = A.sensor_objtype(t.sensor_i, s), A.sensor_objid(t.sensor_i, s)
        reftype, refid = A.sensor_reftype(t.sensor_i, s), A.sensor_refid(t.sensor_i, s)
        result = 1
        if objtype != 0 or reftype != 0:
            if objtype == OBJ_SITE:
                ms = m.param_set(w, t.sensor_f)
                body = A.sensor_body(t.sensor_i, s)
                rot = frame_mat(w, body, A.sensor_quat(t.sensor_f, ms, s), t)
                pos = frame_pos(w, body, A.sensor_pos(t.sensor_f, ms, s), t)
                point = contact_point(w, c, t)
                if not inside_zone(A.sensor_zone(t.sensor_i, s), A.sensor_size(t.sensor_f, ms, s),
                                   rot.transpose() @ (point - pos)):
                    result = 0
            if result != 0:
                g1, g2 = A.contact_geom1(t.con_i, w, c), A.contact_geom2(t.con_i, w, c)
                b1, b2 = A.geom_body(t.geom_i, g1), A.geom_body(t.geom_i, g2)
                m11, m12 = involves(objtype, objid, b1, g1, t), involves(objtype, objid, b2, g2, t)
                m21, m22 = involves(reftype, refid, b1, g1, t), involves(reftype, refid, b2, g2, t)
                if not (m11 or m12) or not (m21 or m22):
                    result = 0
                elif objtype != 0 and reftype != 0:
                    result = -1 if (m12 and m21) and not (m11 and m22) else 1
                elif objtype != 0:
                    result = 1 if m11 else -1
                else:
                    result = 1 if m22 else -1
        return result

    @ti.func
    def contact_criterion(w, c, reduce, t: ti.template()):
        """What the slots are ordered by, ascending: depth (mindist), minus the squared force
        (maxforce); the contact's index (none)."""
        value = fp(c)
        if reduce == _MINDIST:
            value = A.contact_dist(t.con_f, w, c)
        elif reduce == _MAXFORCE:
            f = contact_force(w, c, t)
            value = -(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
        return value

    @ti.func
    def put(w, s, k, value, t: ti.template()):
        t.sensordata[env_index(w, A.sensor_adr(t.sensor_i, s) + k)] = value

    @ti.func
    def put3(w, s, k, v, t: ti.template()):
        for i in ti.static(range(3)):
            put(w, s, k + i, v[i], t)

    @ti.func
    def slot_fields(w, s, c, flip, nmatch, first, t: ti.template()):
        """One slot of sensor s from contact c (copySensorData): seen from the sensor's
        first object, so flipped contacts turn 180 degrees about their second tangent."""
        bits = A.sensor_intprm_at(t.sensor_i, s, 0)
        k = first
        sgn = fp(-1.0) if flip else fp(1.0)
        frame = contact_frame(w, c, t)
        flip_z = m.vec3(1.0, 1.0, sgn)
        if bits & 1:
            put(w, s, k, fp(nmatch), t)
            k += 1
        if bits & 6:
            local = contact_force(w, c, t)
            if bits & 2:
                put3(w, s, k, m.vec3(local[0], local[1], local[2]) * flip_z, t)
                k += 3
            if bits & 4:
                put3(w, s, k, m.vec3(local[3], local[4], local[5]) * flip_z, t)
                k += 3
        if bits & 8:
            put(w, s, k, A.contact_dist(t.con_f, w, c), t)
            k += 1
        if bits & 16:
            put3(w, s, k, contact_point(w, c, t), t)
            k += 3
        if bits & 32:
            put3(w, s, k, sgn * m.vec3(frame[0, 0], frame[0, 1], frame[0, 2]), t)
            k += 3
        if bits & 64:
            put3(w, s, k, sgn * m.vec3(frame[1, 0], frame[1, 1], frame[1, 2]), t)
            k += 3
        if bits & 384:
            point = contact_point(w, c, t)
            b1 = A.geom_body(t.geom_i, A.contact_geom1(t.con_i, w, c))
            b2 = A.geom_body(t.geom_i, A.contact_geom2(t.con_i, w, c))
            rel = velocity(w, b2, point, t) - velocity(w, b1, point, t)
            if bits & 128:
                put3(w, s, k, (frame @ m.lin(rel)) * flip_z, t)
                k += 3
            if bits & 256:
                put3(w, s, k, (frame @ m.ang(rel)) * flip_z, t)
                k += 3
        return k

    @ti.func
    def net_force(w, s, nmatch, t: ti.template()):
        """reduce="netforce": the matched contacts' total force and torque, world-oriented,
        about their force-weighted centre, in slot 0."""
        weight = fp(0.0)
        centre = m.vec3(0)
        force = m.vec3(0)
        torque = m.vec3(0)
        moment = m.vec3(0)
        for c in range(A.ncon(t.con_n, w)):
            sign = contact_match(w, s, c, t)
            if sign != 0:
                local = contact_force(w, c, t) * fp(sign)
                frame = contact_frame(w, c, t)
                own = m.vec3(local[0], local[1], local[2])  # the force in the contact's frame
                f = frame.transpose() @ own
                point = contact_point(w, c, t)
                weight += own.norm()
                centre += own.norm() * point
                force += f
                torque += frame.transpose() @ m.vec3(local[3], local[4], local[5])
                moment += point.cross(f)
        centre = centre / ti.max(weight, fp(MINVAL))
        bits = A.sensor_intprm_at(t.sensor_i, s, 0)
        k = 0
        if bits & 1:
            put(w, s, k, fp(nmatch), t)
            k += 1
        if bits & 2:
            put3(w, s, k, force, t)
            k += 3
        if bits & 4:
            put3(w, s, k, torque + moment - centre.cross(force), t)
            k += 3
        if bits & 8:
            k += 1
        if bits & 16:
            put3(w, s, k, centre, t)
            k += 3
        if bits & 32:
            put(w, s, k, fp(1.0), t)
            k += 3
        if bits & 64:
            put(w, s, k + 1, fp(1.0), t)

    @ti.func
    def contact_sensor(w, s, t: ti.template()):
        """num slots of the matched contacts' fields, in the reduction's order (the first
        matches; the least deep; the largest forces), zero past the matches; or their sum."""
        for k in range(A.sensor_dim(t.sensor_i, s)):
            put(w, s, k, fp(0.0), t)
        reduce = A.sensor_intprm_at(t.sensor_i, s, 1)
        ncon = A.ncon(t.con_n, w)
        nmatch = 0
        for c in range(ncon):
            if contact_match(w, s, c, t) != 0:
                nmatch += 1
        if reduce == _NETFORCE:
            if nmatch > 0:  # none: the slot stays zero, as every slot past the matches
                net_force(w, s, nmatch, t)
        else:
            nslot = ti.min(A.sensor_intprm_at(t.sensor_i, s, 2), nmatch)
            last_value, last_c = fp(-BIG), -1
            k = 0
            for _ in range(nslot):  # the next by (criterion, index) after the last taken
                best_value, best_c, best_sign = fp(BIG), ncon, 0
                for c in range(ncon):
                    sign = contact_match(w, s, c, t)
                    if sign != 0:
                        value = contact_criterion(w, c, reduce, t)
                        after = value > last_value or (value == last_value and c > last_c)
                        if after and (value < best_value or (value == best_value and c < best_c)):
                            best_value, best_c, best_sign = value, c, sign
                k = slot_fields(w, s, best_c, best_sign < 0, nmatch, k, t)
                last_value, last_c = best_value, best_c

    # --- one sensor ------------------------------------------------------------------
    @ti.func
    def write(w, s, k, value, t: ti.template()):
        """Entry k of sensor s, cut off as MuJoCo's apply_cutoff: real values on both sides,
        positive ones above."""
        cutoff = A.sensor_cutoff(t.sensor_f, m.param_set(w, t.sensor_f), s)
        datatype = A.sensor_datatype(t.sensor_i, s)
        out = value
        if cutoff > 0:
            if datatype == REAL:
                out = ti.min(ti.max(value, -cutoff), cutoff)
            elif datatype == POSITIVE:
                out = ti.min(value, cutoff)
        t.sensordata[env_index(w, A.sensor_adr(t.sensor_i, s) + k)] = out

    @ti.func
    def write3(w, s, v, t: ti.template()):
        for k in ti.static(range(3)):
            write(w, s, k, v[k], t)

    @ti.func
    def scalar(w, s, kind, obj, t: ti.template()):
        """The one-entry sensors that read a state or actuator table."""
        value = fp(0.0)
        if kind == S.jointpos:
            value = t.qpos[env_index(w, A.jnt_qposadr(t.jnt_i, obj))]
        elif kind == S.jointvel:
            value = t.qvel[env_index(w, A.jnt_dofadr(t.jnt_i, obj))]
        elif kind == S.jointactuatorfrc:
            o_dof = m.env_start(w, t.sizes, L.SIZE_DOF_STRIDE, L.NDOF_D)
            value = A.dof_qfrc_actuator(t.dof_d, o_dof, A.jnt_dofadr(t.jnt_i, obj))
        elif kind == S.tendonpos:
            value = A.ten_length(t.ten_d, w, obj)
        elif kind == S.tendonvel:
            value = A.ten_velocity(t.ten_d, w, obj)
        elif kind == S.actuatorpos:
            value = A.actuator_length(t.act_d, w, obj)
        elif kind == S.actuatorvel:
            value = A.actuator_velocity(t.act_d, w, obj)
        elif kind == S.actuatorfrc:
            value = A.actuator_force(t.act_d, w, obj)
        elif kind == S.touch:
            value = touch(w, s, t)
        elif kind == S.rangefinder:
            value = rangefinder(w, s, t)
        elif kind == S.tendonactuatorfrc:
            for u in range(t.sizes[L.SIZE_NU]):
                if A.actuator_trntype(t.act_i, u) == 3 and A.actuator_trnid(t.act_i, u) == obj:
                    value += A.actuator_force(t.act_d, w, u)
        return value

    @ti.func
    def frame_sensor(w, s, kind, t: ti.template()):
        """framepos, the frame axes, framequat and the frame velocities and accelerations."""
        ms = m.param_set(w, t.sensor_f)
        body, refbody = A.sensor_body(t.sensor_i, s), A.sensor_refbody(t.sensor_i, s)
        has_ref = A.sensor_reftype(t.sensor_i, s) != 0
        pos = frame_pos(w, body, A.sensor_pos(t.sensor_f, ms, s), t)
        refpos = frame_pos(w, refbody, A.sensor_refpos(t.sensor_f, ms, s), t)
        refmat = frame_mat(w, refbody, A.sensor_refquat(t.sensor_f, ms, s), t)
        if kind == S.framequat:
            q = frame_quat(w, body, A.sensor_quat(t.sensor_f, ms, s), t)
            if has_ref:
                q = m.quat_mul(m.quat_conj(frame_quat(w, refbody, A.sensor_refquat(t.sensor_f, ms, s), t)), q)
            for k in ti.static(range(4)):
                write(w, s, k, q[k], t)
        elif kind == S.framepos:
            v = pos
            if has_ref:
                v = refmat.transpose() @ (pos - refpos)
            write3(w, s, v, t)
        elif kind == S.framexaxis or kind == S.frameyaxis or kind == S.framezaxis:
            rot = frame_mat(w, body, A.sensor_quat(t.sensor_f, ms, s), t)
            axis = m.vec3(rot[0, 2], rot[1, 2], rot[2, 2])
            if kind == S.framexaxis:
                axis = m.vec3(rot[0, 0], rot[1, 0], rot[2, 0])
            elif kind == S.frameyaxis:
                axis = m.vec3(rot[0, 1], rot[1, 1], rot[2, 1])
            if has_ref:
                axis = refmat.transpose() @ axis
            write3(w, s, axis, t)
        elif kind == S.framelinvel or kind == S.frameangvel:
            vel = velocity(w, body, pos, t)
            ang, lin = m.ang(vel), m.lin(vel)
            if has_ref:
                ref = velocity(w, refbody, refpos, t)
                ang = refmat.transpose() @ (ang - m.ang(ref))
                lin = refmat.transpose() @ (lin - m.lin(ref) + (pos - refpos).cross(m.ang(ref)))
            write3(w, s, lin if kind == S.framelinvel else ang, t)
        else:  # framelinacc, frameangacc
            acc = acceleration(w, body, pos, t)
            write3(w, s, m.lin(acc) if kind == S.framelinacc else m.ang(acc), t)

    @ti.func
    def rangefinder(w, s, t: ti.template()):
        """Distance along the site's z axis to the nearest geom not on the site's body, -1
        if none (MuJoCo's rangefinder on a site)."""
        ms = m.param_set(w, t.sensor_f)
        body = A.sensor_body(t.sensor_i, s)
        pos = frame_pos(w, body, A.sensor_pos(t.sensor_f, ms, s), t)
        rot = frame_mat(w, body, A.sensor_quat(t.sensor_f, ms, s), t)
        return rays.cast(w, pos, m.vec3(rot[0, 2], rot[1, 2], rot[2, 2]), body, t)

    @ti.func
    def site_sensor(w, s, kind, t: ti.template()):
        """The sensors read in a site's frame: velocimeter, gyro, accelerometer, force,
        torque, magnetometer."""
        ms = m.param_set(w, t.sensor_f)
        body = A.sensor_body(t.sensor_i, s)
        pos = frame_pos(w, body, A.sensor_pos(t.sensor_f, ms, s), t)
        rot = frame_mat(w, body, A.sensor_quat(t.sensor_f, ms, s), t).transpose()
        v = m.vec3(0)
        if kind == S.velocimeter:
            v = rot @ m.lin(velocity(w, body, pos, t))
        elif kind == S.gyro:
            v = rot @ m.ang(velocity(w, body, pos, t))
        elif kind == S.accelerometer:
            v = rot @ m.lin(acceleration(w, body, pos, t))
        elif kind == S.magnetometer:
            v = rot @ A.opt_magnetic(t.opt_f, m.param_set(w, t.opt_f), 0)
        else:  # force, torque: the wrench from the parent, at the site
            o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
            wrench = A.body_cfrc_int(t.body_d, o, body)
            dif = pos - A.body_subtree_com(t.body_d, o, A.body_root(t.body_i, body))
            v = rot @ (m.lin(wrench) if kind == S.force else m.ang(wrench) - dif.cross(m.lin(wrench)))
        write3(w, s, v, t)

    @ti.func
    def one(w, s, t: ti.template()):
        kind = A.sensor_type(t.sensor_i, s)
        obj = A.sensor_objid(t.sensor_i, s)
        if kind >= S.framepos and kind <= S.frameangacc:
            frame_sensor(w, s, kind, t)
        elif kind <= S.magnetometer and kind != S.touch:
            site_sensor(w, s, kind, t)
        elif kind == S.contact:
            if ti.static(contact_sensors):
                contact_sensor(w, s, t)
        elif kind == S.subtreecom:
            o = m.env_start(w, t.sizes, L.SIZE_BODY_STRIDE, L.NBODY_D)
            write3(w, s, A.body_subtree_com(t.body_d, o, obj), t)
        elif kind == S.subtreelinvel:
            write3(w, s, subtree_linvel(w, obj, t), t)
        elif kind == S.subtreeangmom:
            write3(w, s, subtree_angmom(w, obj, t), t)
        elif kind == S.ballquat:
            adr = A.jnt_qposadr(t.jnt_i, obj)
            q = m.quat_normalize(m.vec4(t.qpos[env_index(w, adr)], t.qpos[env_index(w, adr + 1)],
                                        t.qpos[env_index(w, adr + 2)], t.qpos[env_index(w, adr + 3)]))
            for k in ti.static(range(4)):
                write(w, s, k, q[k], t)
        elif kind == S.ballangvel:
            adr = A.jnt_dofadr(t.jnt_i, obj)
            write3(w, s, m.vec3(t.qvel[env_index(w, adr)], t.qvel[env_index(w, adr + 1)],
                                t.qvel[env_index(w, adr + 2)]), t)
        else:
            write(w, s, 0, scalar(w, s, kind, obj, t), t)

    @ti.func
    def compute(w, t: ti.template(), last_stage):
        """The sensors of world w that need no later stage than ``last_stage`` (mjtStage),
        from its forward pass just run: a refresh pass (integrate.py, REFRESH) updates the
        position and velocity sensors and keeps the acceleration ones of the step, as
        mj_step1 after mj_step does."""
        if t.sizes[L.SIZE_SENSOR_RNE_POST] != 0 and last_stage >= STAGE_ACC:
            reaction.rne_post(w, t.sizes, t.body_i, t.opt_f, t.qvel, t.qacc, t.body_d, t.dof_d, t.geom_i, t.con_f,
                              t.con_i, t.efc_f, t.efc_n)
        for s in range(t.sizes[L.SIZE_NSENSOR]):
            if A.sensor_stage(t.sensor_i, s) <= last_stage:
                one(w, s, t)

    return types.SimpleNamespace(compute=compute)


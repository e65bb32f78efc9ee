"""The narrow-phase routines, by code: the broad phase gives each candidate pair one
(physics/collision/broadphase.py), a World's features name those its step kernel compiles
(physics/features.py) and the collision stage calls them (physics/collision/driver.py)."""

COLLIDE_PLANE_SPHERE, COLLIDE_PLANE_CAPSULE, COLLIDE_PLANE_BOX, COLLIDE_PLANE_CYLINDER = 1, 2, 3, 4
COLLIDE_PLANE_ELLIPSOID, COLLIDE_SPHERE_SPHERE, COLLIDE_SPHERE_CAPSULE, COLLIDE_SPHERE_CYLINDER = 5, 6, 7, 8
COLLIDE_SPHERE_BOX, COLLIDE_CAPSULE_CAPSULE, COLLIDE_CAPSULE_BOX, COLLIDE_BOX_BOX = 9, 10, 11, 12
COLLIDE_HFIELD_SPHERE, COLLIDE_HFIELD_CAPSULE, COLLIDE_HFIELD_BOX = 13, 14, 15  # physics/collision/hfield/
COLLIDE_CONVEX = 16  # physics/collision/convex/: GJK and EPA on support functions
COLLIDE_HFIELD_CONVEX = 17  # physics/collision/hfield/, with the prisms through physics/collision/convex/
COLLIDE_PLANE_MESH = 18  # physics/collision/convex/plane_mesh.py: a mesh's hull vertices below a plane
COLLIDE_HFIELD_MESH = 19  # physics/collision/hfield/prisms.py: a mesh's hull against the prisms, by the convex solver
COLLIDE_FACES = 20  # physics/collision/convex/faces.py: multi-CCD's clipped faces and edges

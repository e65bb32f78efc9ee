"""taigym's task configs and robot assets, as package data.

Installed next to the ``tasks`` package, so that ``tasks.loader.config_dir()`` finds the
same files in a source checkout and in an installed wheel: ``tasks/`` (one YAML per
registered task), ``assets/`` (MJCF and URDF robots and scenes, their meshes and height
maps), ``train/`` (training hyperparameters) and ``leaderboard/`` (benchmark protocols).
"""

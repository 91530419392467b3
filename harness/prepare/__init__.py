"""Each adapter's environment, built once and cached under ``.envs/`` (:mod:`.environments`): a
venv per Python adapter, the pinned Node release (:mod:`.node_releases`) and a startup snapshot
(:mod:`.snapshots`, bundled by ``snapshot/``) per Node one, a build per compiled one
(:mod:`.toolchains`) with, for Java, its pinned JDK (:mod:`.jdk_releases`) and ahead-of-time cache
(:mod:`.aot_cache`); for the docker backend an image per adapter (:mod:`.images`, ``dockerfiles/``).

Contract: an environment is rebuilt only when its fingerprint changes; what cannot be built is a
:class:`harness.errors.PrepareError` naming what is missing, and the rest of the matrix goes on.
"""

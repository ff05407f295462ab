"""Where the project's files live: assets, shipped artifacts, shared data."""

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# Assets and artifacts sit beside the package in the source tree; an editable
# install (the supported way) keeps them there.
PROJECT_DIR = PACKAGE_DIR.parent
ASSETS_DIR = PROJECT_DIR / "assets"
ROBOTS_DIR = ASSETS_DIR / "robots"
MOTIONS_DIR = ASSETS_DIR / "motions"
EXPERTS_DIR = PROJECT_DIR / "experts"
ROUTER_DIR = PROJECT_DIR / "router"


def shared_dir() -> Path | None:
    """The reference-data folder (mocap, robots), or None where it is absent.

    `METAWORLD_X_SHARED` overrides the default of `../shared` next to the
    project, which is where the development machines keep it.
    """
    override = os.environ.get("METAWORLD_X_SHARED")
    candidate = Path(override) if override else PROJECT_DIR.parent / "shared"
    return candidate if candidate.is_dir() else None

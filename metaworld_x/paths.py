"""Where the project's files live: assets, shipped artifacts, shared data."""

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent
# assets/, experts/ and router/ sit beside the package in a checkout (an editable
# install reads them there); a wheel carries them inside it (setup.py).
INSTALLED_DATA_DIR = PACKAGE_DIR / "_data"
DATA_DIR = INSTALLED_DATA_DIR if INSTALLED_DATA_DIR.is_dir() else PROJECT_DIR
ASSETS_DIR = DATA_DIR / "assets"
ROBOTS_DIR = ASSETS_DIR / "robots"
MOTIONS_DIR = ASSETS_DIR / "motions"
EXPERTS_DIR = DATA_DIR / "experts"
ROUTER_DIR = DATA_DIR / "router"


def shared_dir() -> Path | None:
    """The reference-data folder (mocap, robots), or None where it is absent.

    `METAWORLD_X_SHARED` overrides the default of `../shared` next to the
    project, which is where the development machines keep it.
    """
    override = os.environ.get("METAWORLD_X_SHARED")
    candidate = Path(override) if override else PROJECT_DIR.parent / "shared"
    return candidate if candidate.is_dir() else None

"""Build hook: a wheel carries the robot, the motions and the shipped experts and routers inside the package.

They live beside the package in a checkout (`assets/`, `experts/`, `router/`), where an editable install reads
them; a wheel copies them to `metaworld_x/_data/`, which `metaworld_x.paths` reads where it exists. Everything
else is declared in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA = ("assets", "experts", "router")
# Previews for the READMEs and model cards: about 20 MB that no command reads.
LEFT_OUT = ("*.gif", "*.png", "__pycache__", "*.tmp")


class BuildWithData(build_py):
    """build_py, then the data folders into build_lib/metaworld_x/_data (not for an editable install)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "metaworld_x" / "_data"
        shutil.rmtree(target, ignore_errors=True)  # a stale build folder must not carry removed files
        for name in DATA:
            shutil.copytree(ROOT / name, target / name, ignore=shutil.ignore_patterns(*LEFT_OUT))


setup(cmdclass={"build_py": BuildWithData})

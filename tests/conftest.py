"""Shared test fixtures."""

import gc
import os
import sys

import pytest

from metaworld_x.paths import shared_dir  # imports no JAX, so the setting below still comes first

# Under pytest-xdist (`-n 2`) each worker is its own JAX process. On a GPU machine each would otherwise take
# 75 % of the GPU's memory at its first JAX call, and the second worker would run out.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


@pytest.fixture(autouse=True, scope="module")
def release_compiled_functions():
    """Drop JAX's compiled functions after each test file. A worker keeps hundreds of files' executables
    otherwise, each holding memory and memory mappings, and a long worker once crashed inside an XLA compile."""
    yield
    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()
        gc.collect()


@pytest.fixture(scope="session")
def shared():
    """The reference-data folder; tests that need it skip where it is absent."""
    path = shared_dir()
    if path is None:
        pytest.skip("reference data ../shared (mocap, robots) is absent, as on a user's machine")
    return path


@pytest.fixture(scope="session")
def reference_h1(shared):
    path = shared / "robots" / "unitree_h1" / "h1.xml"
    if not path.is_file():
        pytest.skip(f"reference H1 description not found at {path}")
    return path

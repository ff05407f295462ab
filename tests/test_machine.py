"""The machine line that every benchmark table, audit and router record quotes."""

import os

import jax

from metaworld_x.machine import cpu_model, describe_machine


def test_the_machine_line_names_the_cpu_its_cores_and_the_jax_that_measured():
    line = describe_machine()
    assert line.startswith(cpu_model())
    assert f"{os.cpu_count()} logical cores" in line
    assert f"jax {jax.__version__} on {jax.default_backend()}" in line
    assert cpu_model() and "\n" not in line

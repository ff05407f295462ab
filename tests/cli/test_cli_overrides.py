"""Options generated from the configs they override: what is read from the source is what the configs declare."""

import dataclasses
import typing

import pytest

from metaworld_x.cli.overrides import config_fields, overrides_of
from metaworld_x.cli.train import PPO_OVERRIDES, ROUTER_BUDGET
from metaworld_x.routing.all_tasks import AllTasksConfig
from metaworld_x.routing.pipeline import RouterTrainConfig
from metaworld_x.training.config import PPOConfig

CONFIGS = [(PPOConfig, "metaworld_x.training.config"), (RouterTrainConfig, "metaworld_x.routing.pipeline"),
           (AllTasksConfig, "metaworld_x.routing.all_tasks")]


@pytest.mark.parametrize(("config", "module"), CONFIGS, ids=lambda c: getattr(c, "__name__", ""))
def test_the_source_read_gives_each_fields_default_and_help(config, module):
    read = config_fields(module, config.__name__)
    for field in dataclasses.fields(config):
        assert field.name in read, f"{config.__name__}.{field.name} was not read from the source"
        if field.default is not dataclasses.MISSING and isinstance(field.default, (int, float, str, type(None))):
            assert read[field.name].default == field.default, field.name
        assert read[field.name].doc, f"{config.__name__}.{field.name} has no docstring for its option's help"


def test_each_option_has_its_fields_type_made_optional_and_nothing_else():
    for overrides, config in ((PPO_OVERRIDES, PPOConfig), (ROUTER_BUDGET, AllTasksConfig)):
        declared = typing.get_type_hints(config)
        for name, option_type in typing.get_type_hints(overrides).items():
            assert option_type == declared[name] | None, name
    assert PPO_OVERRIDES().given() == {} and PPO_OVERRIDES(num_envs=8, backend="cpu").given() == {"num_envs": 8, "backend": "cpu"}


def test_the_default_hint_names_each_configs_default():
    from metaworld_x.cli import main

    budget = overrides_of("Budget", {"": ("metaworld_x.routing.pipeline", "RouterTrainConfig"),
                                     "--all": ("metaworld_x.routing.all_tasks", "AllTasksConfig")},
                          ("num_worlds", "prior_fit_updates", "eval_episodes"))
    hints = {f.name: typing.get_type_hints(budget, include_extras=True)[f.name].__metadata__[0].help_behavior_hint
             for f in dataclasses.fields(budget)}
    assert hints == {"num_worlds": f"(default: {RouterTrainConfig.num_worlds}; --all: {AllTasksConfig.num_worlds})",
                     "prior_fit_updates": f"(default: --all: {AllTasksConfig.prior_fit_updates})",
                     "eval_episodes": f"(default: {RouterTrainConfig.eval_episodes})"}
    with pytest.raises(ValueError, match="declares 'num_world'"):
        overrides_of("Budget", {"": ("metaworld_x.routing.pipeline", "RouterTrainConfig")}, ("num_world",))
    assert main(["train", "router", "--num-worlds", "0"]) == 2  # refused by the config, in one line


def test_the_generated_help_reads_the_configs_without_importing_them():
    import subprocess
    import sys

    code = ("import sys, contextlib, io; from metaworld_x.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try: main(['train', 'router', '--help'])\n"
            "    except SystemExit: pass\n"
            "print('jax' in sys.modules, '--prior-fit-updates' in out.getvalue())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "True"]

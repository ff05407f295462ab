"""The task library: one task per module, registered here by name."""

from metaworld_x.envs.task import Task, with_overrides
from metaworld_x.envs.tasks.carry import Carry
from metaworld_x.envs.tasks.chains import CHAINS
from metaworld_x.envs.tasks.composite import Fetch
from metaworld_x.envs.tasks.crawl import Crawl
from metaworld_x.envs.tasks.door import Door
from metaworld_x.envs.tasks.push import Push
from metaworld_x.envs.tasks.reach import Reach
from metaworld_x.envs.tasks.rise import Rise
from metaworld_x.envs.tasks.run import Run
from metaworld_x.envs.tasks.sit import Sit
from metaworld_x.envs.tasks.stand import Stand
from metaworld_x.envs.tasks.stop import Stop
from metaworld_x.envs.tasks.turn import Turn
from metaworld_x.envs.tasks.walk import Walk
from metaworld_x.errors import UserError

TASKS: dict[str, type[Task]] = {
    cls.name: cls for cls in (Stand, Walk, Run, Sit, Rise, Turn, Stop, Crawl, Reach, Carry, Push, Door, Fetch, *CHAINS)
}


def make_task(name: str, **overrides) -> Task:
    """The task called `name`, its config's fields replaced by `overrides`."""
    if name not in TASKS:
        raise UserError(f"unknown task {name!r}; tasks: {', '.join(TASKS)}")
    cls = TASKS[name]
    return cls(with_overrides(cls.Config(), overrides))


__all__ = ["TASKS", "make_task", "CHAINS"] + [cls.__name__ for cls in TASKS.values()]

"""The catalog's sequential tasks: each needs two or more experts in turn, and no expert is trained on one.

No sub-goal asks the robot to stop before the next skill: the stand expert, the one skill that could, fell in 3 of
4 episodes when it took over a robot still walking (as did an expert trained to stop from the walk's states), so
each skill takes over from the walk or run as it is.

The robot starts at the origin facing +x (seated on a chair behind it for
rise_walk). Where a skill acts on a prop, the robot must arrive where that
skill's own training scene puts the robot relative to the prop:

- the reach clip holds the right hand 0.52 m ahead of the pelvis and 0.24 m to the right;
- the push scene's table centre is 0.85 m ahead of the robot (scene.compose.PUSH_TABLE);
- the sit scene's seat centre is 0.3 m behind the robot, so a robot that walks up to a chair facing it must turn
  round 0.3 m before the seat.
"""

import math

from metaworld_x.envs.tasks.sequence import Sequence, Subgoal
from metaworld_x.scene.compose import PUSH_BOX, PUSH_MARKER, PUSH_TABLE, Placement
from metaworld_x.scene.props import PUSH_TABLE_HEIGHT

TURNED = math.pi  # a chair turned to face the robot's start
SEAT_BEHIND = 0.3  # m between the robot's pelvis and the seat's centre as the sit clip starts

CHAIR_AHEAD = 2.8
TUNNEL_AHEAD = 4.5
TARGET = (2.6, -0.24, 1.28)
PUSH_SHIFT = 2.0
DOOR_AT = 1.5  # as the door scene: the door expert's clip plays in place
CHAIR_PAST_DOOR = DOOR_AT + 1.2 + CHAIR_AHEAD  # past the doorway (door_through, 1.2 m beyond the door), as far again as walk_sit's


def _shifted(pos, dx):
    return (pos[0] + dx, pos[1], pos[2])


class WalkSit(Sequence):
    """Walk to the chair 2.8 m ahead (it faces the robot), turn round and sit on it.

    Success: all three sub-goals reached in order (turning needs a turn expert).
    """

    name = "walk_sit"
    scene = (Placement("chair", (CHAIR_AHEAD, 0.0, 0.0), (("facing", TURNED),)),)
    subgoals = (
        Subgoal("arrive", "walk", "walk to the chair", "chair", (CHAIR_AHEAD - SEAT_BEHIND, 0.0, 0.0)),
        Subgoal("turn", "turn", "turn round", "chair"),
        Subgoal("seated", "sit", "sit down", "chair"),
    )


class RunCrawl(Sequence):
    """Run to the tunnel 4.5 m ahead and, from 1.5 m before it, crawl through it.

    Success: the torso past the tunnel's far end, after the run.
    """

    name = "run_crawl"
    scene = (Placement("tunnel", (TUNNEL_AHEAD, 0.0, 0.0)),)
    subgoals = (
        Subgoal("arrive", "run", "run to the tunnel", "tunnel", (TUNNEL_AHEAD - 1.5, 0.0, 0.0), radius=0.5),
        Subgoal("through", "crawl", "crawl through it", "tunnel"),
    )


class WalkReach(Sequence):
    """Walk to the target 2.6 m ahead, to where the reach clip's hand meets it, and touch it with the right hand.

    Success: the right hand within 5 cm of the target, after the walk.
    """

    name = "walk_reach"
    scene = (Placement("target", TARGET),)
    subgoals = (
        Subgoal("arrive", "walk", "walk to the target", "target", (TARGET[0] - 0.52, TARGET[1] + 0.24, 0.0)),
        Subgoal("touch", "reach_one_hand", "touch it with your right hand", "target", TARGET, radius=0.05),
    )


class RiseWalk(Sequence):
    """Start seated on the chair, get up and walk 3 m forward.

    Success: standing for `hold_steps`, then the pelvis 3 m ahead (getting up needs a rise expert).
    """

    name = "rise_walk"
    start = "seated"
    scene = (Placement("chair", (-SEAT_BEHIND, 0.0, 0.0)),)
    subgoals = (
        Subgoal("standing", "rise", "get up from the chair", "chair"),
        Subgoal("walked", "walk", "walk forward 3 m", None, (3.0, 0.0, 0.0)),
    )


class WalkPush(Sequence):
    """Walk to the table 2.85 m ahead and push the box on it onto the red marker.

    Success: the box within 10 cm of the marker, after the walk.
    """

    name = "walk_push"
    scene = (
        Placement("table", _shifted(PUSH_TABLE, PUSH_SHIFT), (("height", PUSH_TABLE_HEIGHT), ("half_top", (0.4, 0.5)))),
        Placement("box", _shifted(PUSH_BOX, PUSH_SHIFT)),
        Placement("marker", _shifted(PUSH_MARKER, PUSH_SHIFT)),
    )
    subgoals = (
        Subgoal("arrive", "walk", "walk to the table", "table", (PUSH_SHIFT, 0.0, 0.0), radius=0.2),
        Subgoal("on_marker", "push", "push the box onto the marker", "box"),
    )


class DoorSit(Sequence):
    """Open the door, walk through, walk on to the chair beyond it (facing the robot), turn round and sit.

    Success: all four sub-goals reached in order (turning needs a turn expert).
    """

    name = "door_sit"
    scene = (
        Placement("door", (DOOR_AT, 0.0, 0.0)),
        Placement("chair", (CHAIR_PAST_DOOR, 0.0, 0.0), (("facing", TURNED),)),
    )
    subgoals = (
        Subgoal("door", "door", "open the door and walk through", "door"),
        Subgoal("arrive", "walk", "walk to the chair", "chair", (CHAIR_PAST_DOOR - SEAT_BEHIND, 0.0, 0.0)),
        Subgoal("turn", "turn", "turn round", "chair"),
        Subgoal("seated", "sit", "sit on the chair", "chair"),
    )


CHAINS = (WalkSit, RunCrawl, WalkReach, RiseWalk, WalkPush, DoorSit)

"""Open instructions: an instruction split into clauses, each clause a sub-goal, the scene laid out from their props.

    "crawl through the tunnel, then walk to the target and touch it"
      -> clauses    crawl through the tunnel | walk to the target | touch it
      -> skills     crawl                    | walk               | reach_one_hand
      -> sub-goals  through(tunnel)          | arrive(target)     | touch(target)
      -> scene      tunnel just ahead, target past its exit, where the reach clip's hand meets it

A clause's skill is the one whose phrases the packaged text encoder finds
closest (`SKILLS`); a clause that matches no skill well enough is refused with
one line that lists what the robot can do. Its prop is the object it names
("it" is the previous clause's). Props are laid out along +x in clause order,
each where the skill that acts on it finds it in its own training scene
(`chains.py` has the catalog's layouts; composing a catalog instruction gives
the same sub-goals). "X after Y" and "once Y, X" are put in the order they
are to be done.
"""

import re
from dataclasses import dataclass

import numpy as np

from metaworld_x.envs.tasks import chains
from metaworld_x.envs.tasks.sequence import MAX_SUBGOALS, Sequence, Subgoal
from metaworld_x.errors import UserError
from metaworld_x.scene.compose import PUSH_BOX, PUSH_MARKER, PUSH_TABLE, Placement
from metaworld_x.scene.props import PUSH_TABLE_HEIGHT, TUNNEL_LENGTH
from metaworld_x.vlm.text_prior import split_clauses


@dataclass(frozen=True)
class Skill:
    """A skill a clause can ask for."""

    name: str
    """The expert that does it."""
    phrases: tuple[str, ...]
    """Clauses that ask for it, as the text encoder matches them."""
    says: str
    """What it does, in the words of the "I can ..." line."""


SKILLS: tuple[Skill, ...] = (
    Skill("walk", ("walk to it", "go over to it", "walk forward", "head to it", "walk over", "walk through", "go through"),
          "walk to something"),
    Skill("run", ("run to it", "sprint to it", "run forward", "dash over to it", "jog to it"), "run to something"),
    Skill("sit", ("sit down", "sit on it", "take a seat", "take a seat on it", "be seated"), "sit on a chair"),
    Skill("crawl", ("crawl through it", "crawl under it", "crawl on all fours"), "crawl through a tunnel"),
    Skill("reach_one_hand", ("touch it with your right hand", "reach for it", "put your hand on it"),
          "touch a target with the right hand"),
    Skill("push", ("push it onto it", "shove it", "slide it along it"), "push a box along a table onto a marker"),
    Skill("door", ("open it", "push it open"), "open a door and walk through it"),
    Skill("turn", ("turn round", "turn around", "face the other way"), "turn round"),
    Skill("rise", ("get up from it", "stand up", "rise from it"), "get up from a chair"),
)
MIN_SKILL_SCORE = 0.7
"""The cosine similarity a clause (props replaced by "it") needs with a skill's phrases to ask for it: paraphrases
of the skills score 0.75-1, "jump over it" and "dance" 0.62 and 0.45."""

PROP_WORDS = {
    "chair": ("chair", "stool", "bench"),
    "tunnel": ("tunnel", "passage", "roof"),
    "target": ("target", "ball", "sphere"),
    "table": ("table", "box", "crate", "marker"),  # the push props come as one set; walking "to the box" ends at its table
    "door": ("door", "doorway"),
}
_AFTER = re.compile(r"^(?P<later>.+?)\s+(?:after|once)\s+(?:you(?:'ve| have)?\s+)?(?P<first>.+)$", re.IGNORECASE)
_ONCE = re.compile(r"^(?:once|after)\s+(?:you(?:'ve| have)?\s+)?(?P<first>[^,]+),\s*(?P<later>.+)$", re.IGNORECASE)
_AHEAD = re.compile(r"\b(?:beyond|past|ahead|across|over there|in front)\b", re.IGNORECASE)
_THROUGH = re.compile(r"\bthrough\b", re.IGNORECASE)
_METRES = re.compile(r"(\d+(?:\.\d+)?)\s*(?:m\b|metres?|meters?)", re.IGNORECASE)


def ordered_clauses(instruction: str) -> tuple[str, ...]:
    """The instruction's clauses in the order they are to be done ("sit after you walk to it": walk first)."""
    text = instruction.strip()
    match = _ONCE.match(text) or _AFTER.match(text)
    if match:
        return ordered_clauses(match["first"]) + ordered_clauses(match["later"])
    return split_clauses(text)


_PROP_NOUN = re.compile(r"\b(?:the |a |an )?(?:\w+ )?(?:" + "|".join(n for names in PROP_WORDS.values() for n in names)
                        + r")s?\b", re.IGNORECASE)  # with one adjective: "the red marker"


def without_props(clause: str) -> str:
    """`clause` with every prop it names replaced by "it", and without distances ("3 m")."""
    return " ".join(_METRES.sub("", _PROP_NOUN.sub("it", clause)).split())


_DESTINATION = re.compile(r"\b(?P<to>(?:up )?to(?:wards?)?) " + _PROP_NOUN.pattern, re.IGNORECASE)
_IT = re.compile(r"\bit\b", re.IGNORECASE)


def subgoal_label(clause: str, prop: str | None) -> str:
    """What the text prior scores for a sub-goal: its clause with "it" named ("crawl through it" -> "crawl through the
    tunnel", which the encoder tells from the door expert) and without the place it goes to ("walk to the target" ->
    "walk to", which with the target's name scored the reach expert), nor distances."""
    named = _IT.sub(f"the {prop}", clause) if prop else clause
    return " ".join(_METRES.sub("", _DESTINATION.sub(r"\g<to>", named)).split())


def clause_prop(clause: str) -> str | None:
    """The prop a clause names, if any."""
    words = re.findall(r"[a-z]+", clause.lower())
    for prop, names in PROP_WORDS.items():
        if any(w in names or w.rstrip("s") in names for w in words):
            return prop
    return None


class SkillMatcher:
    """Clause -> skill with the packaged text encoder (anything with `_embed(list[str]) -> [N, D] unit vectors`)."""

    def __init__(self, encoder=None):
        if encoder is None:
            from metaworld_x.routing.language import _packaged_encoder

            encoder = _packaged_encoder()
        self._encoder = encoder
        phrases = [without_props(p) for s in SKILLS for p in s.phrases]
        self._owner = np.asarray([i for i, s in enumerate(SKILLS) for _ in s.phrases])
        self._phrases = np.asarray(encoder._embed(phrases))

    def skills(self, clauses) -> list[Skill]:
        """The skill of each clause (one call of the encoder for all of them)."""
        embedded = np.asarray(self._encoder._embed([without_props(c) for c in clauses]))
        out = []
        for clause, scores in zip(clauses, self._scores(embedded)):
            best = int(np.argmax(scores))
            if scores[best] < MIN_SKILL_SCORE:
                raise UserError(f"the robot cannot {clause!r}: it can {can_do()}; ask for these in turn")
            out.append(SKILLS[best])
        return out

    def _scores(self, embedded: np.ndarray) -> np.ndarray:
        """[N, len(SKILLS)] best cosine of each embedded clause [N, D] against each skill's phrases. The clauses
        have their props' names replaced by "it": the nouns are the composer's to read (`clause_prop`), and left
        in they outweigh the verb ("walk to the chair" came out closer to "sit on the chair" than to "walk to it")."""
        cosine = embedded @ self._phrases.T
        return np.stack([cosine[:, self._owner == k].max(axis=1) for k in range(len(SKILLS))], axis=1)

    def skill(self, clause: str) -> Skill:
        return self.skills([clause])[0]


_PRONOUN = re.compile(r"\b(?:it|there|them)\b", re.IGNORECASE)


def _referent(i: int, clauses, named) -> str | None:
    """The prop clause i is about: the one it names; for "it" or "there", the nearest clause's (the one before,
    else the one after: in "sit on the chair after you walk to it" the chair comes later)."""
    if named[i] is not None or not _PRONOUN.search(clauses[i]):
        return named[i]
    for j in (i - 1, i + 1):
        if 0 <= j < len(named) and named[j] is not None:
            return named[j]
    return None


def can_do() -> str:
    return ", ".join(s.says for s in SKILLS[:-1]) + f" and {SKILLS[-1].says}"


@dataclass
class _Layout:
    """The scene as the composer builds it: props placed so far, where the robot will be, the sub-goals."""

    placements: dict
    subgoals: list
    x: float = 0.0
    start: str = "home"
    chair_facing_robot: bool = False


def compose(instruction: str, matcher: SkillMatcher | None = None) -> type[Sequence]:
    """A Sequence task for `instruction`: one sub-goal per clause (plus a turn before sitting on a chair walked up
    to), its scene laid out from the clauses' props. UserError for a skill the robot lacks or an impossible order."""
    matcher = matcher or SkillMatcher()
    clauses = ordered_clauses(instruction)
    if not clauses:
        raise UserError(f"instruction {instruction!r} has no words; ask for something the robot can do: {can_do()}")
    named = [clause_prop(c) for c in clauses]
    steps = [(clause, skill, _referent(i, clauses, named)) for i, (clause, skill) in enumerate(zip(clauses, matcher.skills(clauses)))]
    layout = _Layout({}, [])
    for i, (clause, skill, prop) in enumerate(steps):
        _add(layout, clause, skill.name, prop, first=i == 0)
    if len(layout.subgoals) > MAX_SUBGOALS:
        raise UserError(f"{instruction!r} asks for {len(layout.subgoals)} sub-goals; a task holds at most {MAX_SUBGOALS}")
    attributes = {"name": "composed", "scene": tuple(layout.placements.values()), "subgoals": tuple(layout.subgoals),
                  "start": layout.start, "instruction": instruction, "__module__": __name__}
    return type("Composed", (Sequence,), attributes)


def _add(layout: _Layout, clause: str, skill: str, prop: str | None, first: bool) -> None:
    """Append the sub-goal(s) of one clause, placing its prop if it is not in the scene yet."""
    goals, x = layout.subgoals, layout.x
    if skill in ("walk", "run"):
        if goals and goals[-1].kind == "door" and (prop == "door" or _THROUGH.search(clause)):
            return  # "open the door and walk through": the door expert walks through
        if prop is None:
            distance = float(m[1]) if (m := _METRES.search(clause)) else 3.0
            goals.append(Subgoal("walked", skill, clause, None, (x + distance, 0.0, 0.0)))
            layout.x = x + distance
            return
        stop = _place(layout, prop, approach=True)
        radius = 0.5 if prop == "tunnel" else (0.2 if prop == "table" else 0.3)
        goals.append(Subgoal("arrive", skill, clause, prop, (stop, _lateral(prop), 0.0), radius))
        layout.x = stop
        return
    if skill == "rise":
        if not first:
            raise UserError(f"{clause!r}: the robot can get up only from the chair it starts on; put it first")
        layout.start = "seated"
        layout.placements["chair"] = Placement("chair", (-chains.SEAT_BEHIND, 0.0, 0.0))
        goals.append(Subgoal("standing", "rise", clause, "chair"))
        layout.x = 0.0
        return
    if skill == "turn":
        goals.append(Subgoal("turn", "turn", clause, prop))
        return
    if skill == "sit":
        if "chair" not in layout.placements and _AHEAD.search(clause):  # "the chair beyond it": walk there first
            stop = _place(layout, "chair", approach=True)
            goals.append(Subgoal("arrive", "walk", "walk to the chair", "chair", (stop, 0.0, 0.0)))
            layout.x = stop
        else:  # a chair right behind the robot, as the sit scene has it, unless one is there
            _place(layout, "chair", approach=False)
        if layout.chair_facing_robot and not (goals and goals[-1].kind == "turn"):
            goals.append(Subgoal("turn", "turn", "turn round", "chair"))
        goals.append(Subgoal("seated", "sit", clause, "chair"))
        return
    if skill == "crawl":
        _place(layout, "tunnel", approach=False)
        goals.append(Subgoal("through", "crawl", clause, "tunnel"))
        layout.x = layout.placements["tunnel"].pos[0] + TUNNEL_LENGTH + 0.5
        return
    if skill == "reach_one_hand":
        _place(layout, "target", approach=False)
        point = layout.placements["target"].pos
        goals.append(Subgoal("touch", "reach_one_hand", clause, "target", point, radius=0.05))
        return
    if skill == "push":
        _place(layout, "table", approach=False)
        goals.append(Subgoal("on_marker", "push", clause, "box"))
        return
    if skill == "door":
        _place(layout, "door", approach=False)
        goals.append(Subgoal("door", "door", clause, "door"))
        layout.x = layout.placements["door"].pos[0] + 1.2  # the door_through site
        return
    raise UserError(f"the robot cannot {clause!r}: it can {can_do()}")


# Where the robot stops to use each prop, relative to the prop (m along x; the robot faces +x): the skill's own
# training scene has it there. A walk to a prop ends APPROACH metres from where it began.
OFFSET = {"chair": chains.SEAT_BEHIND, "tunnel": 1.5, "target": 0.52, "table": PUSH_TABLE[0], "door": chains.DOOR_AT}
APPROACH = {"chair": chains.CHAIR_AHEAD - chains.SEAT_BEHIND, "tunnel": chains.TUNNEL_AHEAD - 1.5,
            "target": chains.TARGET[0] - 0.52, "table": chains.PUSH_SHIFT, "door": 2.0}


def _lateral(prop: str) -> float:
    """The robot's y where it stops at `prop`: under the reach clip's hand for a touch, else on the prop's axis."""
    return chains.TARGET[1] + 0.24 if prop == "target" else 0.0


def _place(layout: _Layout, prop: str, approach: bool) -> float:
    """Put `prop` in the scene, unless it is there, and return the x the robot stops at to use it.

    approach: the robot walks up to it from where it is; otherwise the robot already stands where the skill
    starts. A chair walked up to faces the robot (it turns round to sit); one that is not stands behind it."""
    if prop not in layout.placements:
        stop = layout.x + (APPROACH[prop] if approach else 0.0)
        at = stop + OFFSET[prop]
        if prop == "chair":
            facing = (("facing", chains.TURNED),) if approach else ()
            at = stop + OFFSET[prop] if approach else stop - chains.SEAT_BEHIND
            layout.placements["chair"] = Placement("chair", (at, 0.0, 0.0), facing)
            layout.chair_facing_robot = approach
        elif prop == "target":
            layout.placements["target"] = Placement("target", (at, chains.TARGET[1], chains.TARGET[2]))
        elif prop == "table":
            shift = stop
            layout.placements["table"] = Placement("table", (PUSH_TABLE[0] + shift, 0.0, 0.0),
                                                   (("height", PUSH_TABLE_HEIGHT), ("half_top", (0.4, 0.5))))
            layout.placements["box"] = Placement("box", (PUSH_BOX[0] + shift, 0.0, PUSH_BOX[2]))
            layout.placements["marker"] = Placement("marker", (PUSH_MARKER[0] + shift, 0.0, PUSH_MARKER[2]))
        else:
            layout.placements[prop] = Placement(prop, (at, 0.0, 0.0))
    pos = layout.placements[prop].pos
    return pos[0] - OFFSET[prop]

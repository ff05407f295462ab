"""The expert catalog: the skills a scorer chooses between, described in plain English."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from metaworld_x.errors import UserError


@dataclass(frozen=True)
class Expert:
    """One skill as a scorer sees it."""

    name: str
    """Identifier, also the answer a VLM is asked to give (e.g. `walk`)."""
    description: str
    """One line of plain English; it is what a VLM prompt lists."""
    phrases: tuple[str, ...] = ()
    """Extra instructions this skill serves; the text prior matches them too."""

    @property
    def line(self) -> str:
        """`name: description`, as listed in prompts and embedded by the text prior."""
        return f"{self.name}: {self.description}"


@dataclass(frozen=True)
class ExpertCatalog:
    """An ordered set of experts; the order is the router's output order."""

    experts: tuple[Expert, ...]
    """The experts, in the order scores and priors are returned."""
    default: str = "stand"
    """The expert a scorer falls back to when it cannot read the instruction."""
    _index: dict = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        names = [expert.name for expert in self.experts]
        if not names:
            raise UserError("an expert catalog needs at least one expert")
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise UserError(f"expert names must be unique; repeated: {', '.join(duplicates)}")
        if self.default not in names:
            raise UserError(
                f"fallback expert {self.default!r} is not in the catalog ({', '.join(names)});"
                " pass default= one of them"
            )
        object.__setattr__(self, "_index", {name: i for i, name in enumerate(names)})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(expert.name for expert in self.experts)

    @property
    def descriptions(self) -> dict[str, str]:
        return {expert.name: expert.description for expert in self.experts}

    def __len__(self) -> int:
        return len(self.experts)

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise UserError(f"unknown expert {name!r}; the catalog has {', '.join(self.names)}") from None

    def fingerprint(self) -> str:
        """sha256 of everything a scorer reads from the catalog (cache keys use it)."""
        payload = json.dumps(
            {
                "default": self.default,
                "experts": [[e.name, e.description, list(e.phrases)] for e in self.experts],
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    @classmethod
    def from_descriptions(cls, descriptions: Mapping[str, str], default: str | None = None) -> "ExpertCatalog":
        """A catalog from `{name: one-line description}`; the default falls back to `stand`, else the first."""
        experts = tuple(Expert(name, text) for name, text in descriptions.items())
        if default is None:
            default = "stand" if "stand" in descriptions else next(iter(descriptions), "stand")
        return cls(experts, default=default)


DEFAULT_CATALOG = ExpertCatalog(
    (
        Expert(
            "stand",
            "stand still upright and keep balance in place",
            ("stand still", "stay where you are", "keep your balance", "stand up straight"),
        ),
        Expert(
            "walk",
            "walk forward at a steady pace",
            ("walk over there", "walk across the room", "move forward on foot", "go forward"),
        ),
        Expert(
            "run",
            "run forward fast",
            ("sprint", "run quickly", "jog", "hurry"),
        ),
        Expert(
            "sit",
            "sit down on a chair or seat",
            ("have a seat", "sit down", "be seated"),
        ),
        Expert(
            "crawl",
            "crawl on hands and knees under a low obstacle",
            ("get down on all fours", "crawl low to the ground"),
        ),
        Expert(
            "reach_one_hand",
            "reach out with the right hand to touch a target",
            ("touch the target with your hand", "reach for it with one hand", "put your hand on it", "press the button",
             "point at it"),
        ),
        Expert(
            "reach_two_hands",
            "raise an object forward with both hands",
            ("lift it up with both hands", "hold the package up in front of you", "raise it with both arms"),
        ),
        Expert(
            "carry",
            "carry a box held in both hands over to a table and put it down",
            ("bring it over here", "deliver the parcel", "carry it while walking", "take it over there and set it down"),
        ),
        Expert(
            "push",
            "push a heavy object along with both hands onto a marker",
            ("push it forward", "shove it along", "push it onto the mark"),
        ),
        Expert(
            "door",
            "open a door and go through the doorway",
            ("open the door", "pull the door handle", "go through the door"),
        ),
    ),
    default="stand",
)


def as_catalog(experts: "ExpertCatalog | Mapping[str, str] | None") -> ExpertCatalog:
    """Accept a catalog, a `{name: description}` mapping, or None for the default catalog."""
    if experts is None:
        return DEFAULT_CATALOG
    if isinstance(experts, ExpertCatalog):
        return experts
    if isinstance(experts, Mapping):
        return ExpertCatalog.from_descriptions(experts)
    raise UserError(
        f"experts must be an ExpertCatalog or a {{name: description}} mapping, not {type(experts).__name__}"
    )

"""Explicit observation adapters between the router and experts with different observation spaces.

The router's observation is a dict of named parts, e.g. {'qpos': [B, 24],
'qvel': [B, 25], 'object': [B, 7]}. Each expert declares its layout: the
ordered parts it was trained on, with sizes (its spec's 'obs_layout'). The
adapter concatenates exactly those parts for each expert, checks every size,
and refuses (UserError, listing what is missing) rather than pad or truncate.
"""

from typing import Mapping, Sequence

import jax
import jax.numpy as jnp

from metaworld_x.errors import UserError

Layout = tuple[tuple[str, int], ...]


def as_layout(layout, owner: str) -> Layout:
    """Accept {name: size} (ordered) or [[name, size], ...]; return ((name, size), ...)."""
    items = layout.items() if isinstance(layout, Mapping) else layout
    try:
        parsed = tuple((str(name), int(size)) for name, size in items)
    except (TypeError, ValueError):
        raise UserError(f"{owner}'s observation layout must be {{name: size}} or [[name, size], ...], got {layout!r}") from None
    names = [n for n, _ in parsed]
    if len(set(names)) != len(names) or any(size <= 0 for _, size in parsed):
        raise UserError(f"{owner}'s observation layout repeats a part or has a non-positive size: {parsed}")
    return parsed


class ExpertAdapter:
    """Maps the router's named observation parts onto each expert's layout."""

    def __init__(self, router_layout, expert_layouts: Mapping[str, object]):
        self.router_layout = as_layout(router_layout, "the router")
        self.expert_layouts = {name: as_layout(layout, f"expert {name!r}") for name, layout in expert_layouts.items()}
        sizes = dict(self.router_layout)
        problems = []
        for expert, layout in self.expert_layouts.items():
            missing = [name for name, _ in layout if name not in sizes]
            if missing:
                problems.append(f"expert {expert!r} needs {', '.join(missing)}, which the router's observation lacks")
            wrong = [f"{name} ({size} here, {sizes[name]} in the router's observation)"
                     for name, size in layout if name in sizes and sizes[name] != size]
            if wrong:
                problems.append(f"expert {expert!r} has different sizes for {', '.join(wrong)}")
        if problems:
            raise UserError(
                "the experts' observations cannot be built from the router's: " + "; ".join(problems)
                + f". The router provides {', '.join(f'{n}[{s}]' for n, s in self.router_layout)}; add the missing parts"
                " to the router's observation or retrain the expert on parts it has"
            )

    @classmethod
    def from_specs(cls, router_layout, specs: Mapping[str, dict]) -> "ExpertAdapter":
        """Layouts from the experts' policy specs ('obs_layout'); an expert without one is refused."""
        lacking = [name for name, spec in specs.items() if "obs_layout" not in spec]
        if lacking:
            raise UserError(
                f"expert(s) {', '.join(lacking)} have no 'obs_layout' in their policy.json, so their observations"
                " cannot be matched by name; re-save them with save_policy(..., spec={'obs_layout': ...})"
            )
        return cls(router_layout, {name: spec["obs_layout"] for name, spec in specs.items()})

    @property
    def router_obs_size(self) -> int:
        return sum(size for _, size in self.router_layout)

    def expert_obs_size(self, expert: str) -> int:
        return sum(size for _, size in self.expert_layouts[expert])

    def _gather(self, parts: Mapping[str, jax.Array], layout: Layout, owner: str) -> jax.Array:
        missing = [name for name, _ in layout if name not in parts]
        if missing:
            raise UserError(f"the observation for {owner} lacks part(s) {', '.join(missing)}; it has {', '.join(parts) or 'none'}")
        for name, size in layout:
            if parts[name].shape[-1] != size:
                raise UserError(f"observation part {name!r} has {parts[name].shape[-1]} entries; {owner} expects {size}")
        return jnp.concatenate([jnp.asarray(parts[name]) for name, _ in layout], axis=-1)

    def router_obs(self, parts: Mapping[str, jax.Array]) -> jax.Array:
        """The router's own input [..., router_obs_size], in its layout's order."""
        return self._gather(parts, self.router_layout, "the router")

    def expert_obs(self, parts: Mapping[str, jax.Array], expert: str) -> jax.Array:
        """Expert `expert`'s input [..., its size], in its layout's order."""
        if expert not in self.expert_layouts:
            raise UserError(f"no expert named {expert!r}; known: {', '.join(self.expert_layouts)}")
        return self._gather(parts, self.expert_layouts[expert], f"expert {expert!r}")


def split_parts(obs: jax.Array, layout: Sequence[tuple[str, int]]) -> dict[str, jax.Array]:
    """Inverse of concatenation: obs [..., total] -> {name: [..., size]} in layout order."""
    layout = as_layout(layout, "the observation")
    total = sum(size for _, size in layout)
    if obs.shape[-1] != total:
        raise UserError(f"observation has {obs.shape[-1]} entries but its layout sums to {total}")
    out, start = {}, 0
    for name, size in layout:
        out[name] = obs[..., start : start + size]
        start += size
    return out

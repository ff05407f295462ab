"""Router checkpoints, bound to the expert set they were trained with.

`router.msgpack` holds the network's parameters (flax msgpack) and
`router.json` the config, input sizes, the ordered expert set (name and
policy hash of each) and library versions. Loading compares the recorded
expert set with the installed one and refuses any difference, naming the
missing, extra, changed and reordered experts: a router's output i means
"expert i of the set it was trained with". `trained_experts` picks that set
out of a library that has grown since: an expert added to experts/ leaves
the routers trained without it as they were.
"""

import dataclasses
from pathlib import Path

from flax import serialization

from metaworld_x.errors import UserError
from metaworld_x.params_file import check_payload, read_record, write_params
from metaworld_x.routing.config import RouterConfig
from metaworld_x.experts.installed import ExpertSet
from metaworld_x.routing.network import Router, RouterParams

FORMAT_VERSION = 1
PARAMS_FILE = "router.msgpack"
META_FILE = "router.json"
FILES = (PARAMS_FILE, META_FILE)


def save_router(directory: Path, router: Router, params: RouterParams, experts: ExpertSet | list[dict], meta: dict | None = None) -> Path:
    """Write the router atomically, recording the expert set (names and policy hashes, in order)."""
    record_experts = experts.record() if isinstance(experts, ExpertSet) else list(experts)
    if [e["name"] for e in record_experts] != list(router.expert_names):
        raise UserError(
            f"the expert set {[e['name'] for e in record_experts]} is not the router's {list(router.expert_names)}"
        )
    record = {
        "config": dataclasses.asdict(router.config),
        "obs_size": router.obs_size,
        "text_size": router.text_size,
        "experts": record_experts,
        **(meta or {}),
    }
    return write_params(directory, FILES, serialization.to_bytes(params), record, FORMAT_VERSION)


def expert_set_differences(recorded: list[dict], installed: list[dict]) -> list[str]:
    """Human-readable differences between two [{'name', 'hash'}] lists; empty when identical."""
    old = {e["name"]: e["hash"] for e in recorded}
    new = {e["name"]: e["hash"] for e in installed}
    problems = []
    missing = [n for n in old if n not in new]
    extra = [n for n in new if n not in old]
    changed = [n for n in old if n in new and old[n] != new[n]]
    if missing:
        problems.append(f"missing: {', '.join(missing)}")
    if extra:
        problems.append(f"extra: {', '.join(extra)}")
    if changed:
        problems.append("changed: " + ", ".join(f"{n} (trained with {old[n]}, installed {new[n]})" for n in changed))
    if not problems and [e["name"] for e in recorded] != [e["name"] for e in installed]:
        problems.append(f"reordered: trained with {[e['name'] for e in recorded]}, installed {[e['name'] for e in installed]}")
    return problems


def load_router(directory: Path, installed: ExpertSet | list[dict]) -> tuple[Router, RouterParams, dict]:
    """Read a router; refuse it unless the installed expert set is exactly the one it was trained with."""
    record, payload = read_record(directory, FILES, "router", FORMAT_VERSION)
    installed_record = installed.record() if isinstance(installed, ExpertSet) else list(installed)
    problems = expert_set_differences(record["experts"], installed_record)
    if problems:
        raise UserError(
            f"router in {directory} was trained with a different expert set — {'; '.join(problems)}."
            " Install the experts it was trained with, or retrain the router on the installed ones"
        )
    check_payload(directory, FILES, "router", record, payload)
    config = dict(record["config"])
    config["hidden"] = tuple(config["hidden"])
    router = Router(RouterConfig(**config), record["obs_size"], record["text_size"], tuple(e["name"] for e in record["experts"]))
    try:
        params = serialization.from_bytes(router.template(), payload)
    except Exception as error:  # flax raises several types on a structure mismatch
        raise UserError(f"router in {directory} does not match its recorded config ({error})") from None
    return router, params, record


def trained_experts(directory: Path, experts_dir: Path) -> dict[str, Path]:
    """{name: folder} in `experts_dir` of the experts the router in `directory` was trained with, in its order.

    Other installed experts are left out: the router never chose them. One it needs that is missing is named
    by `load_router`'s check, which still refuses any that changed."""
    from metaworld_x.json_file import read_json_object

    record = read_json_object(Path(directory) / META_FILE, "the router's record")
    found = {p.parent.name: p.parent for p in sorted(Path(experts_dir).glob("*/policy.json"))}
    names = [e["name"] for e in record.get("experts", [])]
    missing = [n for n in names if n not in found]
    if missing:
        raise UserError(f"the router in {directory} needs the expert(s) {', '.join(missing)}, missing from {experts_dir};"
                        f" train them with `metaworld-x train expert {missing[0]} --out {Path(experts_dir) / missing[0]}`")
    return {n: found[n] for n in names}

"""Known limits of the shipped artifacts that their metrics cannot show, for the model cards (`metaworld_x.cards`).

Keyed by expert skill and by router task. A card also lists the limits it derives from the artifact's own
metrics (goals missed, failed episodes, starts it was not trained on); these are the rest. Each line is a
fact a user should know before relying on the artifact, with the figure that shows it.
"""

EXPERT_LIMITS: dict[str, tuple[str, ...]] = {
    "stand": (
        "Taking over from carry's set-down (the robot bent over the table) is the hard start: 21/30 at seed 7.",
    ),
    "run": (
        "Reaches the sprint (5.1 m/s) over its clip's 7 s speed-up; it has not learned to start running from "
        "a walk (walking 50-200 steps, then switching to run, fell in every episode).",
    ),
    "sit": (
        "Sits about 4 cm higher than the clip's seated pelvis, which is where its task reward loses most.",
    ),
    "crawl": (
        "Gets down from standing by a controlled fall onto the hands (its clip's first 3.5 s are this expert's own "
        "simulated get-down); 1-2 % of clip starts that begin mid-fall (1.8-1.9 s) are lost (247/250 over five seeds).",
    ),
    "carry": (
        "Lowers the box on its clip's clock, up to 12 cm short of its place; the hands stay on the box until it rests, "
        "so it lands upright, but the box can end 4-11 cm from its place by the end of a 1000-step episode.",
        "Trained through a chain of fine-tunes; the command on its card reproduces the last stage only.",
        "Its clip is OMOMO data: research use only.",
    ),
    "reach_two_hands": (
        "Trained without home starts: from the home pose it falls in most episodes (10/50 succeed at seed 7); "
        "no router gives it weight.",
    ),
    "reach_one_hand": (),
    "walk": (),
    "push": (
        "HumanoidBench's success bonus is paid as 1 a step, not 1000 once, so its returns are not on "
        "HumanoidBench's scale.",
        "Its own success line is 5 cm (HumanoidBench's is 10 cm). Handed the walk's state in its own scene it gets the "
        "box within 5 cm in 0 of 10 and falls in 8; in walk_push, where 10 cm counts, the box reaches the marker in "
        "37 of 40 (seeds 0 and 1).",
        "Trained on 10 s episodes: left in charge longer, as the last expert of a chain, it falls after about 12 s "
        "(25 of 30 walk_push episodes at seed 1, where the box reached the marker after 3.0 s on average).",
    ),
    "door": (),
}

ROUTER_LIMITS: dict[str, tuple[str, ...]] = {
    "fetch": (
        "Succeeds through the carry expert alone, which does the whole task from home; played as one world, "
        "`metaworld-x play`'s default seed 0 is its one miss among seeds 0-9.",
    ),
    "crawl": ("Succeeds through the crawl expert alone, which gets down from standing and crawls.",),
}

# True of every router trained by the current pipeline, whatever its task.
ALL_ROUTERS: tuple[str, ...] = (
    "Bound to the expert set it was trained on (names and parameter hashes above): it is refused when the "
    "installed experts differ, and must be retrained after any expert changes.",
    "Its world model is a short-horizon one (about as far off as the spread of states 20 steps ahead) and rates "
    "mixtures of experts nearly alike, so imagination moves the router little from the language prior.",
)

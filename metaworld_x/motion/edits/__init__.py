"""Clip edits: new reference clips made from the library's own, where a take alone cannot serve an expert.

A clip edit takes one or two robot clips and returns a new `Clip`: a walk that
speeds up into a run, or a cycle started from standing (`gait_transition`); a
keyed lead-in from the home pose (`lead_in`) or lead-out back to it
(`lead_out`); a get-up played backwards into a crawl (`get_down`); hands closed
on the scene's box (`grip`). An edit's poses and moved hands are targets only:
the whole clip goes through the same IK, floor, foot-pinning and contact stages
as retargeted mocap (`retarget.solve_clip`), so an edited clip's poses are ones
the robot's joints reach, with every stance foot pinned.
"""

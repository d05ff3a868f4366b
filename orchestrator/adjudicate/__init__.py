"""``go19 adjudicate``: the resign analysis of runs already played and labelled (the games
joined with their KataGo win rates by :mod:`.scan`; the numbers are
:mod:`orchestrator.quality.resign`'s)."""

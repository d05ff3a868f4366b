"""``go19 review``: a run's games labelled by KataGo (the label path, with the position after
the last move) and judged move by move (:mod:`.games`): the input of the report's move-quality
section and, later, of the live quality line."""

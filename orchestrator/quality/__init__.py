"""Move quality from KataGo's labels (pure: numpy, no I/O): each move's point loss, KataGo's
move and the policy rank of the played move (:mod:`.moves`), and per player the means,
rates and bootstrap intervals over games, the paired verdict between two players and the
game at which it was first decided (:mod:`.summary`). docs/review.md gives the formulas and
their sources."""

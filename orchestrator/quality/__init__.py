"""Move quality from KataGo's labels (pure: numpy, no I/O): each move's point loss, KataGo's
move and the policy rank of the played move (:mod:`.moves`); per player the means, rates
(KaTrain's accuracy and go19's uniform one) and bootstrap intervals over games, the paired
verdict between two players and the game at which it was first decided (:mod:`.summary`);
the report's section as typed values (:mod:`.report`), the live review's running numbers
(:mod:`.running`) and the verdict in words (:mod:`.verdict`). A game is joined with its
labels by :func:`orchestrator.label.join.review_game`. docs/review.md gives the formulas and
their sources."""

"""The browser face of go19: ``go19 play`` (play and watch games on one page) and
``collect --web`` (watch a running collection).

An ASGI app (Starlette) served by Hypercorn's trio worker inside go19's own trio
run, one WebSocket per page. The game logic stays in Python: the referee, the
players and the estimate run here; the page (static HTML/CSS/JS, an SVG board)
only draws snapshots and sends clicks. Needs the ``web`` extra.
"""

"""Reports rebuilt from recordings only (run folders: SGFs + games.jsonl).

load (read folders) -> stats (every number, one JSON-ready dict) -> markdown / html
(+ svg charts, tables shared by both) ; build writes report.{md,json,html}.
"""

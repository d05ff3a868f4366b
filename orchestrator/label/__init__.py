"""KataGo labels: a prepared KataGo (``make katago``) and a trio client for its analysis engine."""

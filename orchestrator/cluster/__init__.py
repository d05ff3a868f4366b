"""go19 on a Ray cluster (the optional ``cluster`` extra): ``go19 label --ray`` and
``go19 dataset build --ray``. Nothing here is imported unless ``--ray`` is given, so the
single-machine paths never need Ray."""
